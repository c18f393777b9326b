"""The Python side of the ``python`` strategy (placement/strategies/python): finds the class a
scenario names, makes it and calls its ``place(graph, cluster, deadline)``.

The C++ strategy calls :func:`call` inside ``Strategy::place`` (timed and validated like every
strategy); whatever goes wrong here is raised as one line naming the class, and becomes the point's
failure row, never a crash of the run.
"""
import importlib
import json
import os
import sys
import traceback

import yaml

#: Classes registered with :func:`placesim.register_strategy`, by name.
registered = {}


def register(cls, name=None):
    """Registers ``cls`` under ``name`` (default: its ``__name__``) for scenarios that give
    ``options: {class: NAME}`` without a ``module``."""
    if not callable(getattr(cls, "place", None)):
        raise TypeError(f"{cls!r} has no place(graph, cluster, deadline) method")
    registered[name or cls.__name__] = cls
    return cls


def _find_class(module, class_name, paths):
    if not module:
        if class_name not in registered:
            known = ", ".join(sorted(registered)) or "none"
            raise LookupError(f"no strategy class '{class_name}' registered with placesim.register_strategy "
                              f"(registered: {known}); or give options.module")
        return registered[class_name]
    for folder in reversed(paths):
        folder = os.path.abspath(folder)
        if folder not in sys.path:
            sys.path.insert(0, folder)
    mod = importlib.import_module(module)
    try:
        return getattr(mod, class_name)
    except AttributeError:
        raise LookupError(f"module '{module}' ({getattr(mod, '__file__', '?')}) has no class '{class_name}'") from None


def _where(error):
    """'file.py:12 in place' of the innermost frame of the error's traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    f = frames[-1]
    return f" (at {os.path.basename(f.filename)}:{f.lineno} in {f.name})"


class _Loader(yaml.SafeLoader):
    """YAML as placesim writes it: numbers from Python carry the tag !base-units (in base units)."""


def _base_units(loader, node):
    value = loader.construct_scalar(node)
    try:
        return int(value)
    except ValueError:
        return float(value)


_Loader.add_constructor("!base-units", _base_units)


def call(module, class_name, paths, args_yaml, graph, cluster, deadline):
    """Returns (placement, details as JSON text); raises RuntimeError with one line on any error."""
    who = f"{module}.{class_name}" if module else class_name
    try:
        cls = _find_class(module, class_name, paths)
        args = yaml.load(args_yaml, Loader=_Loader) or {}
        placer = cls(**args)
        result = placer.place(graph, cluster, deadline)
    except Exception as error:  # noqa: BLE001 -- every error of the user's code is the point's failure
        raise RuntimeError(f"python strategy {who}: {type(error).__name__}: {error}{_where(error)}") from None
    details = {}
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
        result, details = result
    elif isinstance(result, dict):
        details = {k: v for k, v in result.items() if k != "placement"}
        result = result.get("placement")
    if result is None:
        raise RuntimeError(f"python strategy {who}: place() returned no placement (expected a GPU index per operator)")
    try:
        details_json = json.dumps(details, default=_plain)
    except (TypeError, ValueError) as error:
        raise RuntimeError(f"python strategy {who}: the details place() returned are not JSON: {error}") from None
    return result, details_json


def _plain(value):
    """NumPy scalars and arrays in the details, as plain numbers and lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
