from typing import Any, Optional, Sequence, Tuple, Union
import os
# Filters: [(column, op, value)], all must hold, or "year>=2023,city=a|b": on
# partition keys they choose objects, on other columns rows.
PartitionFilters = Union[str, Sequence[Tuple[str, str, Any]]]

def read(src: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]], *, format: Optional[str] = ...,
         columns: Optional[Sequence[str]] = ..., splits_per_partition: Optional[int] = ...,
         npartitions: Optional[int] = ..., threads: Optional[int] = ...,
         batch_rows: Optional[int] = ..., memory: Optional[int] = ...,
         hive_partitioning: bool = ..., union_by_name: bool = ..., filters: Optional[PartitionFilters] = ..., **format_options: Any) -> Any: ...
