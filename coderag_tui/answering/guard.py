"""Stop an answer the moment it starts repeating itself, whatever model streams it.

Small models loop: the same sentence again and again until the token limit. The guard sits on
the token stream and holds back the line or sentence being written (up to `HOLD_CHARS`, then
its last `n` words); text leaves it only once it is known not to repeat. It stops when

- a sequence of `n` words (6) is completed for the `times`-th time (3), or
- a sentence of at least `MIN_SENTENCE_WORDS` words is completed a second time, or
- a line is written the `LINE_REPEATS`-th time, numbers aside ("1. 1." "2. 2." ...), or
- a sentence of at least `NEAR_MIN_WORDS` words makes a family of three near-copies: each the
  same as another of them with at most one word changed, added or removed, numbers aside
  ("created or destroyed" / "created and destroyed" written in turn, or drifting a word at a
  time). Two such sentences pass: "The request context is pushed." / "The app context is
  pushed." is an ordinary pair; a third is a loop,

and then drops the repeating part it still holds, so the shown answer never contains the
third copy of any `n`-word sequence. Words are compared lowercased, punctuation ignored.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

REPEAT_NOTE = "[answer stopped: it started repeating]"
LIMIT_NOTE = "[answer cut: it reached the answer length limit ({tokens} tokens)]"
HOLD_CHARS = 160
MIN_SENTENCE_WORDS = 5
LINE_REPEATS = 4
NEAR_MIN_WORDS = 4
NEAR_FAMILY = 3  # near-copies (the first sentence included) that make a loop

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def line_key(line: str) -> str:
    """A line's words with every number as 0: list items that differ only by number match."""
    return " ".join(re.sub(r"\d+", "0", w) for w in words(line))


def repeated_line(text: str, times: int = LINE_REPEATS) -> str:
    """The first line (numbers aside, two words or more) written `times` times ('' when none)."""
    seen: Counter[str] = Counter()
    for line in text.splitlines():
        key = line_key(line)
        if len(key.split()) >= 2:
            seen[key] += 1
            if seen[key] >= times:
                return key
    return ""


def near_copy(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """`a` is `b` with at most one word changed, added or removed."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(1 for x, y in zip(a, b, strict=True) if x != y) <= 1
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]


def sentence_key(sentence: str) -> tuple[str, ...]:
    """A sentence's words, lowercased, with every number as 0."""
    return tuple(re.sub(r"\d+", "0", w) for w in words(sentence))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


class NearCopies:
    """Families of near-copies: a sentence joins (and joins together) the families of every
    earlier sentence it is a near-copy of."""

    def __init__(self) -> None:
        self._keys: list[tuple[str, ...]] = []
        self._family: list[int] = []  # per key: its family's id
        self._sizes: dict[int, int] = {}

    def add(self, key: tuple[str, ...]) -> int:
        """Add a sentence's key; the size of the family it is now in."""
        joined = {self._family[i] for i, k in enumerate(self._keys) if near_copy(k, key)}
        family = min(joined) if joined else len(self._keys)
        size = 1 + sum(self._sizes.pop(f) for f in joined)
        self._family = [family if f in joined else f for f in self._family]
        self._keys.append(key)
        self._family.append(family)
        self._sizes[family] = size
        return size


def near_loop(text: str) -> str:
    """The first sentence that makes a family of `NEAR_FAMILY` near-copies ('' when none): the
    measure of a near-loop, the same rule the guard stops on."""
    families = NearCopies()
    for sentence in _SENTENCE_END.split(text):
        key = sentence_key(sentence)
        if len(key) >= NEAR_MIN_WORDS and families.add(key) >= NEAR_FAMILY:
            return " ".join(key)
    return ""


def repeated_ngram(text: str, n: int = 6, times: int = 3) -> str:
    """The first `n`-word sequence that occurs `times` times in `text` ('' when none):
    the measure of a degenerate answer."""
    seen: Counter[tuple[str, ...]] = Counter()
    ws = words(text)
    for i in range(len(ws) - n + 1):
        gram = tuple(ws[i : i + n])
        seen[gram] += 1
        if seen[gram] >= times:
            return " ".join(gram)
    return ""


@dataclass
class RepetitionGuard:
    """Feed it the streamed text; it returns what may be shown now. `stopped` turns true when
    the answer repeats (stop generating then), `flush()` releases the rest at the end."""

    n: int = 6
    times: int = 3
    hold_chars: int = HOLD_CHARS
    stopped: bool = False
    reason: str = ""  # the repeating words, when stopped
    _held: str = ""
    _pending_word: str = ""  # the last word, maybe incomplete
    _recent: list[str] = field(default_factory=list)  # the last n-1 completed words
    _grams: Counter[tuple[str, ...]] = field(default_factory=Counter)
    _sentences: set[str] = field(default_factory=set)
    _near: NearCopies = field(default_factory=lambda: NearCopies())
    _lines: Counter[str] = field(default_factory=Counter)
    _line_text: str = ""  # the line being written
    _line_cut: int = 0  # offset in _held where it starts (0 once released)
    _word_starts: list[int] = field(default_factory=list)  # offsets in _held of held words
    _sentence_start: int = 0  # offset in _held of the sentence being written
    _cut: int = 0  # offset in _held where the repeating part starts (once stopped)

    def feed(self, text: str) -> str:
        if self.stopped or not text:
            return ""
        for ch in text:
            if self._step(ch):
                return self._release_until_stop()
        return self._release()

    def flush(self) -> str:
        """What is still held once the stream has ended (nothing after a stop)."""
        if self.stopped:
            return ""
        if self._pending_word:
            self._complete_word(len(self._held))
        if self.stopped:
            return self._release_until_stop()
        out, self._held = self._held, ""
        self._word_starts.clear()
        return out

    # ------------------------------------------------------------------ internals
    def _step(self, ch: str) -> bool:
        """Add one character; True when the answer has started repeating."""
        if not self._line_text:
            self._line_cut = len(self._held)
        self._held += ch
        self._line_text += ch
        if ch.isalnum() or ch == "_":
            self._pending_word += ch
            return False
        if self._pending_word:
            self._complete_word(len(self._held) - 1)
            if self.stopped:
                return True
        # a sentence ends at a newline, or at whitespace after . ! ? (not in "app.py")
        if ch == "\n" or (ch.isspace() and len(self._held) > 1 and self._held[-2] in ".!?"):
            self._end_sentence()
        if ch == "\n" and not self.stopped:
            self._end_line()
        return self.stopped

    def _end_line(self) -> None:
        key = line_key(self._line_text)
        self._line_text = ""
        if len(key.split()) < 2:
            return
        self._lines[key] += 1
        if self._lines[key] >= LINE_REPEATS:
            self.stopped = True
            self.reason = key
            self._cut = self._line_cut

    def _complete_word(self, end: int) -> None:
        word = self._pending_word.lower()
        self._word_starts.append(end - len(self._pending_word))
        self._pending_word = ""
        gram = (*self._recent, word)
        self._recent = list(gram[-(self.n - 1) :]) if self.n > 1 else []
        if len(gram) < self.n:
            return
        self._grams[gram] += 1
        if self._grams[gram] >= self.times:
            self.stopped = True
            self.reason = " ".join(gram)
            self._cut = self._word_starts[-self.n] if len(self._word_starts) >= self.n else 0

    def _end_sentence(self) -> None:
        held = self._held_sentence()
        sentence = " ".join(words(held))
        if len(sentence.split()) >= MIN_SENTENCE_WORDS:
            if sentence in self._sentences:
                self._stop_at_sentence(sentence)
                return
            self._sentences.add(sentence)
        key = sentence_key(held)
        if len(key) >= NEAR_MIN_WORDS and self._near.add(key) >= NEAR_FAMILY:
            self._stop_at_sentence(" ".join(key))
            return
        self._mark_sentence_start()

    def _stop_at_sentence(self, reason: str) -> None:
        self.stopped = True
        self.reason = reason
        self._cut = self._sentence_start
        lead = self._held[self._line_cut : self._sentence_start]
        if self._line_cut < self._sentence_start and not any(c.isalpha() for c in lead):
            self._cut = self._line_cut  # a list item's number or bullet goes with it

    def _held_sentence(self) -> str:
        return self._held[self._sentence_start :]

    def _mark_sentence_start(self) -> None:
        self._sentence_start = len(self._held)

    def _release(self) -> str:
        """Release the held text up to the current line or sentence, whichever started first
        (past `hold_chars`, all but the last n words)."""
        cut = min(self._sentence_start, self._line_cut) if self._line_text else self._sentence_start
        if len(self._held) - cut > self.hold_chars:
            # a long line or sentence: only its last n words stay held
            cut = max(cut, self._word_starts[-self.n] if len(self._word_starts) >= self.n else 0)
        out = self._held[:cut]
        if out:
            self._held = self._held[cut:]
            self._sentence_start = max(self._sentence_start - cut, 0)
            self._line_cut = max(self._line_cut - cut, 0)
            self._word_starts = [s - cut for s in self._word_starts if s >= cut]
        return out

    def _release_until_stop(self) -> str:
        """Release what precedes the repeating part; drop the rest."""
        out = self._held[: max(self._cut, 0)]
        self._held = ""
        self._word_starts.clear()
        return out.rstrip() if out.strip() else out
