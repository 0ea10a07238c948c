from typing import Any, Optional, Sequence, Union
import os

def read(src: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]], *, format: Optional[str] = ...,
         columns: Optional[Sequence[str]] = ..., splits_per_partition: Optional[int] = ...,
         npartitions: Optional[int] = ..., threads: Optional[int] = ...,
         batch_rows: Optional[int] = ..., memory: Optional[int] = ...,
         hive_partitioning: bool = ..., **format_options: Any) -> Any: ...
