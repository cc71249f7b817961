"""Packages whose names are read from the one module that holds them (render/, results/).

With PYTHONDONTWRITEBYTECODE every module read is compiled on every run, so a package reads only
the module a name lives in, on first use.
"""

import importlib


def module_getattr(package: str, where: dict[str, str], modules: tuple[str, ...]):
    """A module-level __getattr__ for `package`: NAME from the module `where` names, else from the first of `modules` that has it."""

    def __getattr__(name: str):
        for module in [where[name]] if name in where else modules:
            found = getattr(importlib.import_module(f"{package}.{module}"), name, None)
            if found is not None:
                return found
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
