"""A deep copy of magma's objects that gives what `copy.deepcopy` (pydantic's `model_copy(deep=True)`) gives,
several times faster.

`copy.deepcopy` looks up a copier for every value by type, through `__reduce_ex__` for pydantic models and
quantities. The objects magma copies (pod templates, Jobs) are pydantic models, dicts, lists and scalars almost
throughout; `deep_copy` copies those directly and hands anything else to `copy.deepcopy` with the same memo, so
that a value reached twice is copied once and shared in the copy, as `copy.deepcopy` does.

One difference, on purpose: a `Quantity` is shared, not copied. A quantity is never changed (its only writes
are the value caches it fills on first use, the same in every copy), so a copy and its original that share
one are indistinguishable but for `is`, and nothing compares quantities by identity.
"""

from __future__ import annotations

import copy
from typing import Any, TypeVar

from pydantic import BaseModel

from .quantity import Quantity

T = TypeVar("T")

#: Values copied as themselves (immutable), as copy.deepcopy does.
_ATOMIC = frozenset({str, int, float, bool, type(None), bytes, complex, Quantity})


def deep_copy(value: T, memo: dict[int, Any] | None = None) -> T:
    """A deep copy of `value`, as `copy.deepcopy(value)` (see the module docstring)."""
    return _copy(value, {} if memo is None else memo)


def _copy(value: Any, memo: dict[int, Any]) -> Any:
    cls = type(value)
    if cls in _ATOMIC:
        return value
    done = memo.get(id(value), memo)
    if done is not memo:
        return done
    if cls is dict:
        out: Any = {}
        memo[id(value)] = out
        for k, v in value.items():
            out[k if type(k) in _ATOMIC else _copy(k, memo)] = v if type(v) in _ATOMIC else _copy(v, memo)
        return out
    if cls is list:
        out = []
        memo[id(value)] = out
        append = out.append
        for v in value:
            append(v if type(v) in _ATOMIC else _copy(v, memo))
        return out
    if isinstance(value, BaseModel) and cls.__deepcopy__ is BaseModel.__deepcopy__:
        return _copy_model(value, memo)
    return copy.deepcopy(value, memo)


def _copy_fields(fields: dict[str, Any], memo: dict[int, Any]) -> dict[str, Any]:
    """A model's field dict (its own, referenced from nowhere else): atomic values taken over in one go. An empty
    dict or list (most of a model's defaults) is copied here, as `_copy` copies it: a new one, once per original."""
    out = fields.copy()
    for k, v in fields.items():
        cls = type(v)
        if cls in _ATOMIC:
            continue
        if not v and (cls is dict or cls is list):
            done = memo.get(id(v), memo)
            if done is memo:
                done = memo[id(v)] = cls()
            out[k] = done
        else:
            out[k] = _copy(v, memo)
    return out


def _copy_model(model: BaseModel, memo: dict[int, Any]) -> BaseModel:
    """pydantic's BaseModel.__deepcopy__, with the parts copied by `_copy`."""
    cls = type(model)
    new = cls.__new__(cls)
    memo[id(model)] = new
    setattr_ = object.__setattr__
    setattr_(new, "__dict__", _copy_fields(model.__dict__, memo))
    extra = model.__pydantic_extra__
    setattr_(new, "__pydantic_extra__", None if extra is None else _copy_fields(extra, memo) if extra else {})
    setattr_(new, "__pydantic_fields_set__", model.__pydantic_fields_set__.copy())
    private = getattr(model, "__pydantic_private__", None)
    if private is None:
        setattr_(new, "__pydantic_private__", None)
    else:
        from pydantic_core import PydanticUndefined

        setattr_(new, "__pydantic_private__",
                 _copy({k: v for k, v in private.items() if v is not PydanticUndefined}, memo))
    return new


__all__ = ["deep_copy"]
