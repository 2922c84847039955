"""Token counts with cl100k_base through tiktoken, entirely offline.

tiktoken would download the encoding at first use; this machine has no internet. The PyPI
package bpe-openai ships the official file gzipped. We decompress it, check it is byte for byte
the official file (sha256), and build the tiktoken Encoding from it. There is no fallback to a
character estimate: a wrong count is worse than a clear error.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.util
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# cl100k_base's pre-tokenisation pattern and special tokens, as tiktoken defines them.
_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


class TokenizerUnavailable(RuntimeError):
    pass


def _ranks() -> dict[bytes, int]:
    # Found without importing bpe_openai: its __init__ decodes three vocabularies (~2 s).
    spec = importlib.util.find_spec("bpe_openai")
    try:
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError("bpe_openai")
        folder = Path(next(iter(spec.submodule_search_locations)))
        blob = (folder / "data" / "cl100k_base.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise TokenizerUnavailable(
            "cl100k_base is not available offline: install the bpe-openai package (pip install bpe-openai)"
        ) from exc
    raw = gzip.decompress(blob)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != CL100K_SHA256:
        raise TokenizerUnavailable(
            f"bpe-openai's cl100k_base file has sha256 {digest}, not the official {CL100K_SHA256}"
        )
    # "<base64 token> <rank>" lines: every other field is a token. binascii.a2b_base64 is what
    # base64.b64decode calls (without its per-call argument checks): 2.5x faster over 100k lines.
    fields = raw.split()
    if len(fields) % 2:
        raise TokenizerUnavailable("bpe-openai's cl100k_base file is not token/rank pairs")
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """The cl100k_base encoding, verified against the official file's hash."""
    import tiktoken  # deferred: importing it costs ~0.1 s, and emit's importers (the MCP server) may never count

    return tiktoken.Encoding(
        name="cl100k_base", pat_str=_PAT, mergeable_ranks=_ranks(), special_tokens=_SPECIAL
    )


def count(text: str) -> int:
    """cl100k_base tokens in text (special-token strings count as ordinary text)."""
    return len(encoding().encode_ordinary(text))


def count_repetitive(text: str) -> int:
    """count(text), the same number, for text made of repeated parts (a JSON list of similar
    rows, as ``json.dumps`` separates them): each distinct ", "-separated part is tokenized once.

    Why the sum of the parts is the whole: cl100k's pre-tokenizer (_PAT) cuts the text into
    pieces and the BPE runs on each piece alone, so a count is the sum over pieces. No piece
    holds a comma and the space after it: the letter alternative takes one non-letter only
    before letters, the punctuation run ``[^\\s\\p{L}\\p{N}]++`` stops at whitespace and takes
    only newlines after it, and the whitespace alternatives hold no comma. So every ", " is a
    piece boundary, the pattern looks at nothing to the left of where a piece starts, and a part
    ending in "," ends no differently at the end of its text (nothing there is whitespace).
    Parts that occur m times are joined (the joins are again ", ") and counted once, times m."""
    parts = text.split(", ")
    if len(parts) < 3:
        return count(text)
    return count(parts[0] + ",") + count_parts(Counter(parts[1:-1])) + count(" " + parts[-1])


def count_parts(parts: Counter[str]) -> int:
    """The tokens of the middle parts of a ", "-joined text (count_repetitive): the sum of
    m * count(" " + part + ",") over each part occurring m times, each distinct part tokenized
    once (those of one multiplicity together, joined again by ", ")."""
    enc = encoding()
    by_times: dict[int, list[str]] = {}
    for part, times in parts.items():
        by_times.setdefault(times, []).append(part)
    total = 0
    for times, group in sorted(by_times.items()):
        total += times * len(enc.encode_ordinary(" " + ", ".join(group) + ","))
    return total


def lines_add_up(lines: list[str]) -> bool:
    r"""Whether count("\n".join(lines) + "\n") is the sum of count(line + "\n") over the lines:
    true when there are lines and each holds a character other than whitespace and no CR or LF.

    Why: a line's newline is a piece of its own, or ends a whitespace run (``\s*[\r\n]``, whose
    ``\s*`` backtracks to the one newline in reach, as ``\s++$`` takes the run when the line
    stands alone) or a punctuation run (``[\r\n]*+`` stops at the next line's first character,
    not a newline). The whitespace after a newline cannot run on to the next line's newline,
    since that line holds a non-space before it. No alternative looks behind, so each line's
    pieces start and end as they do alone. (Python's isspace holds every character the
    pattern's ``\s`` does, so ``line.strip()`` finds a non-whitespace one.)"""
    return bool(lines) and all(line.strip() and "\n" not in line and "\r" not in line for line in lines)


# A digit next to a character that is neither a number nor whitespace is a piece boundary too:
# no alternative of _PAT matches a number (\p{N}) together with anything else, and where the
# character left of the cut is not whitespace, no piece before it looks past it (only the
# whitespace alternatives look ahead). So count(a + b) == count(a) + count(b) when a ends or b
# starts with an ASCII digit and the other side of the cut is a printable ASCII non-digit. A
# run of digits between two such characters is cut by \p{N}{1,3}+ into threes from its left,
# each a piece of its own: its count is the sum of theirs (count_digit_run).


@lru_cache(maxsize=1)
def digit_counts() -> dict[str, int]:
    """count(s) of every string of one to three ASCII digits (1,110 of them)."""
    enc = encoding()
    return {s: len(enc.encode_ordinary(s)) for width in (1, 2, 3) for s in (f"{v:0{width}d}" for v in range(10**width))}


def count_digit_run(run: str) -> int:
    """count(run) for ASCII digits standing between printable ASCII non-digits (see above)."""
    table = digit_counts()
    return sum(table[run[i:i + 3]] for i in range(0, len(run), 3))
