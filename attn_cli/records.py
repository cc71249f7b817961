"""Plain classes with __slots__ that print, and if asked compare, as dataclasses do.

The result and head classes on the start-up path use these instead of @dataclass: a dataclass
generates and compiles its methods when its module is imported (~0.3 ms a class), and `attn`
starts with a dozen of them.
"""


class Record:
    """repr() from __slots__, in the order declared. Compared by identity (arrays inside)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self.__slots__)})"


class ValueRecord(Record):
    """A Record equal to another of its class when every slot is equal (and so, like such a
    dataclass, not hashable)."""

    __slots__ = ()

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None
