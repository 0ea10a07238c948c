from typing import Any, Optional, Sequence

from sluice import PartitionFilters, Sources

# src as for sluice.read (paths, URLs, lists of them, a file's bytes);
# filters as for sluice.read, OR-groups included.
def read(src: Sources, *, format: Optional[str] = ...,
         columns: Optional[Sequence[str]] = ..., splits_per_partition: Optional[int] = ...,
         npartitions: Optional[int] = ..., threads: Optional[int] = ...,
         batch_rows: Optional[int] = ..., memory: Optional[int] = ...,
         hive_partitioning: bool = ..., union_by_name: bool = ..., filters: Optional[PartitionFilters] = ..., **format_options: Any) -> Any: ...
