"""`attn vectors info` and `attn vectors convert`."""

from dataclasses import asdict, dataclass


@dataclass
class VectorsInfo:
    path: str
    format: str
    keys: int
    dimension: int
    dtype: str
    file_bytes: int
    load_seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class VectorsConverted:
    source: str
    source_format: str
    destination: str
    keys: int
    dimension: int
    dtype: str
    file_bytes: int
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)
