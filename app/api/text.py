"""Text fields the tokenizer, the vector stores and the JSON encoder can all take.

Measured: a lone UTF-16 surrogate (`"\\ud83d"` in JSON, which Python's parser accepts)
makes the tokenizer raise TypeError, the edge engine's filter conversion raise TypeError
and the JSON response fail to encode: each was a 500. C0/C1 control characters (other than
tab, newline, carriage return) pass the model but are never typed by a shopper, reach
logs and payload filters verbatim, and are refused here too, with the position named.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

_UNSAFE = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def reject_unsafe_text(value: str) -> str:
    """`value` unchanged, or ValueError naming the first character no engine should get."""
    found = _UNSAFE.search(value)
    if found is None:
        return value
    code = ord(found.group())
    kind = "a lone UTF-16 surrogate" if 0xD800 <= code <= 0xDFFF else "a control character"
    raise ValueError(f"contains {kind} (U+{code:04X}) at position {found.start()}")


SafeText = Annotated[str, AfterValidator(reject_unsafe_text)]
