"""One result object per command: it feeds both the JSON output (`to_dict`) and the Rich view.

Each section belongs to one command family; add new results to the section they belong to.
"""

from dataclasses import asdict, dataclass


# --- vectors -------------------------------------------------------------------------------


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


# --- softmax / analogy / similarity --------------------------------------------------------


# --- inspect -------------------------------------------------------------------------------


# --- heads ---------------------------------------------------------------------------------
