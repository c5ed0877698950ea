"""Property tests: chunking never changes lines; patterns agree with a reference."""

from __future__ import annotations

import os
import re
import tempfile

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from procwindow.core import InvalidPattern, Pattern, Stream
from procwindow.core._disklog import DiskLog, LogFile
from procwindow.core._output import OutputStore, ReadBuffers, count_newlines
from procwindow.core._replay import DiskOutput

from ..tiers import examples

LIMIT = 12  # a small line cap, so that splitting is exercised constantly

# Bytes that matter to the rules, plus multibyte characters and invalid UTF-8.
ATOMS = [
    b"a",
    b"b",
    b" ",
    b"\n",
    b"\r",
    b"\r\n",
    "é".encode(),
    "€".encode(),
    "😀".encode(),
    b"\xff",
    b"\xe2\x82",
    b"\x80",
]
streams = st.lists(st.sampled_from(ATOMS), max_size=120).map(b"".join)


def utf8_cut(data: bytes, limit: int) -> int:
    cut = limit
    for _ in range(3):
        if cut <= 0 or (data[cut] & 0xC0) != 0x80:
            break
        cut -= 1
    return cut if cut > 0 else limit


def reference(data: bytes, limit: int) -> list[tuple[str, bool]]:
    """The rules, one byte at a time, as a terminal would take them."""
    out: list[tuple[str, bool]] = []
    cur = bytearray()
    pending_cr = False
    for byte in data:
        if byte == 0x0A:
            out.append((cur.decode("utf-8", "replace"), False))
            cur.clear()
            pending_cr = False
            continue
        if pending_cr:  # a \r not followed by \n starts the line over
            cur.clear()
            pending_cr = False
        if byte == 0x0D:
            pending_cr = True
            continue
        cur.append(byte)
        if len(cur) > limit:
            cut = utf8_cut(bytes(cur), limit)
            out.append((bytes(cur[:cut]).decode("utf-8", "replace"), True))
            del cur[:cut]
    if cur or pending_cr:
        out.append((cur.decode("utf-8", "replace"), False))
    return out


def capture(chunks: list[tuple[Stream, bytes]], disk: DiskLog | None = None) -> OutputStore:
    """Feed the chunks as the supervisor does, each at its own time (and into
    ``disk``, the log files and journal, when given)."""
    store = OutputStore(10**9, 10**9, line_max=LIMIT)
    for i, (stream, chunk) in enumerate(chunks):
        buf = bytearray(chunk)  # a reusable buffer, as the supervisor's
        pieces = store.pieces
        store.feed(stream, buf, len(chunk), float(i))
        if disk is not None:
            disk.write(
                stream,
                memoryview(buf)[: len(chunk)],
                float(i),
                store.last_seq,
                store.pending_size(stream),
                split=store.pieces != pieces,
            )
    for stream in Stream:
        store.flush(stream, 1e6)
        if disk is not None:
            disk.end(stream, 1e6, store.last_seq)
    return store


def lines_of(store: OutputStore, stream: Stream) -> list[tuple[str, bool]]:
    lines, dropped, _ = store.read(0)
    assert dropped == 0
    assert [ln.seq for ln in lines] == list(range(1, len(lines) + 1))
    return [(ln.text, ln.split) for ln in lines if ln.stream is stream]


def cut(data: bytes, points: list[int]) -> list[bytes]:
    marks = sorted({p % (len(data) + 1) for p in points})
    return [data[a:b] for a, b in zip([0, *marks], [*marks, len(data)], strict=True) if b > a]


@settings(max_examples=examples(400), suppress_health_check=[HealthCheck.too_slow])
@given(streams, st.lists(st.integers(0, 10**6), max_size=30))
def test_any_chunking_gives_the_reference_lines(data, points):
    whole = capture([(Stream.STDOUT, data)])
    chunked = capture([(Stream.STDOUT, piece) for piece in cut(data, points)])
    want = reference(data, LIMIT)
    assert lines_of(whole, Stream.STDOUT) == want
    assert lines_of(chunked, Stream.STDOUT) == want
    assert all(len(text.encode("utf-8", "surrogatepass")) <= LIMIT * 3 for text, _ in want)


@settings(max_examples=examples(300))
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(1, 60)), max_size=40))
def test_counting_newlines_agrees_with_count(runs):
    # Runs of lines of one length: long lines, short ones and a mix, several KiB.
    data = b"".join(b"x" * (length - 1) + b"\n" for length, times in runs for _ in range(times))
    data += b"tail" * (len(runs) % 3)
    assert count_newlines(data) == data.count(b"\n")


def interleave(out: bytes, err: bytes, points: list[int], rnd) -> list[tuple[Stream, bytes]]:
    """Both streams cut at ``points`` and merged in a random order of reads."""
    pieces = [(Stream.STDOUT, p) for p in cut(out, points)]
    epieces = [(Stream.STDERR, p) for p in cut(err, points[::-1])]
    merged = []
    while pieces or epieces:
        source = pieces if (pieces and (not epieces or rnd.random() < 0.5)) else epieces
        merged.append(source.pop(0))
    return merged


@settings(max_examples=examples(200))
@given(streams, streams, st.lists(st.integers(0, 10**6), max_size=20), st.randoms())
def test_two_streams_interleaved_keep_their_own_lines(out, err, points, rnd):
    merged = interleave(out, err, points, rnd)
    store = capture(merged)
    assert lines_of(store, Stream.STDOUT) == reference(out, LIMIT)
    assert lines_of(store, Stream.STDERR) == reference(err, LIMIT)


@settings(max_examples=examples(150), deadline=None)
@given(
    streams,
    streams,
    st.lists(st.integers(0, 10**6), max_size=20),
    st.randoms(),
    st.lists(st.integers(0, 400), max_size=6),
    st.integers(1, 50),
)
def test_replay_from_disk_gives_the_same_lines(out, err, points, rnd, starts, limit):
    """What the journal and the log files give back, from any seq and in any
    step, is exactly what the ring gave."""
    merged = interleave(out, err, points, rnd)
    with tempfile.TemporaryDirectory() as tmp:
        logs = {s: os.path.join(tmp, f"1.{s.value}.log") for s in Stream}
        disk = DiskLog(
            {s: LogFile(path) for s, path in logs.items()}, os.path.join(tmp, "1.journal"), None
        )
        store = capture(merged, disk)
        disk.close()
        # The same splitting rules as the ring, at the small line cap.
        with DiskOutput(
            logs, os.path.join(tmp, "1.journal"), finished=True, line_max=LIMIT
        ) as replay:
            assert replay.read(0) == store.read(0)
            # Search cuts candidate lines straight from the log: the same lines.
            starts = {0: 0, 1: 0}
            for k in range(len(replay.seq)):
                index, end = replay.stream[k], replay.end[k]
                if replay.kind[k] == 0:
                    data = replay.file((Stream.STDOUT, Stream.STDERR)[index]).get(
                        starts[index], end
                    )
                    ends = [starts[index] + i for i, b in enumerate(data) if b == 10]
                    cut_out = replay.lines_at(k, ends)
                    if cut_out is not None:
                        assert cut_out == [
                            ln
                            for ln in replay.record_lines(k)
                            if ln.stream.value == ("stdout", "stderr")[index]
                        ]
                starts[index] = end
            for since in starts:
                assert replay.read(since, limit) == store.read(since, limit)
                for stream in Stream:
                    assert replay.read(since, limit, stream) == store.read(since, limit, stream)


BUFFER = 16  # a small read buffer, so that most reads fill it and are handed over


@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.booleans(), streams), max_size=6),
    st.lists(st.integers(1, BUFFER + 4), min_size=1, max_size=20),
    st.integers(1, 120),
    st.integers(1, 40),
)
def test_handed_buffers_give_what_copies_give(parts, sizes, max_bytes, max_lines):
    """Reads handed to the ring as they are (full ones) and reads copied out of
    a reused buffer give the same lines, the same drops and the same cursors,
    after every read, even as buffers come back from lines that fell off and
    are written again. Each buffer is scribbled over before each use, so a
    buffer given back while the ring still showed its lines would show."""
    pool = ReadBuffers(BUFFER, keep=2)
    handed = OutputStore(max_lines, max_bytes, line_max=LIMIT, buffers=pool)
    copied = OutputStore(max_lines, max_bytes, line_max=LIMIT)
    buf = pool.take()
    step = 0
    for is_err, data in parts:
        stream = Stream.STDERR if is_err else Stream.STDOUT
        pos = 0
        while pos < len(data):
            n = min(sizes[step % len(sizes)], BUFFER, len(data) - pos)
            buf[:] = b"#" * BUFFER
            buf[:n] = data[pos : pos + n]
            pos += n
            step += 1
            full = n == BUFFER
            copied.feed(stream, bytearray(buf), n, float(step))
            handed.feed(stream, buf, n, float(step), handed=full)
            if full:  # as the capture does: the ring has it, read into another
                buf = pool.take()
            for since in (0, max(0, copied.last_seq - 3)):
                assert handed.read(since) == copied.read(since)
    for stream in Stream:
        assert handed.flush(stream, 1e6) == copied.flush(stream, 1e6)
    assert handed.read(0) == copied.read(0)
    assert handed.nbytes == copied.nbytes
    # Nothing is lost: what fell off gave its buffer back (up to ``keep``).
    assert handed.shrink(0) == copied.shrink(0)
    assert handed.read(0) == copied.read(0)


def reference_match(pattern: str, topic: str) -> bool:
    """Patterns as a regex: '*' one token, a final '>' one or more."""
    parts = pattern.split(".")
    rx = ""
    for i, part in enumerate(parts):
        sep = r"\." if i else ""
        if part == ">":
            rx += sep + r"[^.]+(\.[^.]+)*"
        elif part == "*":
            rx += sep + r"[^.]+"
        else:
            rx += sep + re.escape(part)
    return re.fullmatch(rx, topic) is not None


tokens = st.sampled_from(["session", "s1", "s2", "agent", "a", "proc", "start", "exit"])
pattern_tokens = st.one_of(tokens, st.just("*"))


@settings(max_examples=examples(500))
@given(
    st.lists(pattern_tokens, min_size=0, max_size=6),
    st.booleans(),
    st.lists(tokens, min_size=1, max_size=7),
)
def test_pattern_matching_agrees_with_the_reference(head, tail, topic_tokens):
    pattern = ".".join([*head, ">"] if tail else head)
    topic = ".".join(topic_tokens)
    if not pattern:
        return
    assert Pattern(pattern).matches(topic) == reference_match(pattern, topic)


@example("x")
@example("*.>")
@example("x.*")
@example("a.*")
@example(">")
@example("x.y")
@given(st.text(max_size=40))
def test_any_pattern_text_compiles_or_is_invalid(text):
    try:
        compiled = Pattern(text)
    except InvalidPattern:
        return
    tokens = text.split(".")
    # One "x" per token: only wildcards and literal "x" tokens match it.
    assert compiled.matches(".".join("x" for _ in tokens)) == all(
        tok in ("*", ">", "x") for tok in tokens
    )
    # Each wildcard filled in with a token: every valid pattern matches that.
    assert compiled.matches(".".join("x" if tok in ("*", ">") else tok for tok in tokens))
