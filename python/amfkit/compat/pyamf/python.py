"""`pyamf.python`: the type tuples and float helpers PyAMF code imports from here."""

from __future__ import annotations

import math
import types

__all__ = ["NaN", "NegInf", "PosInf", "class_types", "func_types", "int_types", "isNaN", "isNegInf", "isPosInf", "str_types"]

func_types = (
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.CodeType,
    types.FunctionType,
    types.GeneratorType,
    types.LambdaType,
    types.MethodType,
)
class_types = (type,)
int_types = (int,)
str_types = (str, bytes)

PosInf = math.inf
NegInf = -math.inf
NaN = math.nan


def isNaN(val: float) -> bool:
    return math.isnan(float(val))


def isPosInf(val: float) -> bool:
    return float(val) == math.inf


def isNegInf(val: float) -> bool:
    return float(val) == -math.inf
