"""How the output pane draws a line: plain text, or HTML with colours, marks and a time.

No Qt here. :class:`LineRenderer` holds what a line's look depends on besides
the line (the palette, the filter's marker, the current match, whether times
show, the colours of marks and times) and answers the ``shown``, ``shownFormat``
and ``styled`` roles of :class:`~procwindow.qt.models.OutputModel` from a
:class:`~procwindow.qt.models._lines.LineBuffer`. Most lines are drawn as the
raw text, ``Text.PlainText``: those with nothing to style (no escape sequence,
control character or tab, no match marked, no time shown), which are laid out
faster and need no HTML made for them; the others as HTML, ``Text.StyledText``
(``Text.RichText`` while a filter's matches are marked: only it draws their
backgrounds).

A view asks for a row's rendering more often than it changes: each delegate
reads ``shown`` and ``shownFormat``, and when the oldest lines go, every row on
screen is told it changed although most of them only moved up (see
``OutputModel.shifted``). The renderer keeps the last :data:`RENDER_CACHE`
renderings by line number (numbers stay with their lines as rows shift), so
the lines still on screen are not rendered again; anything that changes every
line's look (:meth:`LineRenderer.restyle`) empties it, and a line that
becomes (or stops being) the current match's renders anew, as each rendering
says whether it was the current match's.

>>> buf = LineBuffer(10)
>>> buf.extend([Line(1, Stream.STDOUT, 0.0, "plain"), Line(2, Stream.STDOUT, 0.0, "\\x1b[1mbold")])
>>> buf.scan(1.0)
>>> renderer = LineRenderer()
>>> renderer.shown(buf, 0, 0), renderer.shown(buf, 1, 1)
(('plain', 0), ('<b>bold</b>', 4))
"""

from __future__ import annotations

from procwindow.core import Line

from .. import ansi, highlight
from ._filter import Marker
from ._lines import LineBuffer
from .format import time_text

__all__ = [
    "DEFAULT_COLORS",
    "PLAIN_TEXT",
    "RENDER_CACHE",
    "RICH_TEXT",
    "STYLED_TEXT",
    "LineRenderer",
]

#: The ``shownFormat`` of a line: QML ``Text``'s ``textFormat`` values. Plain text
#: is laid out faster than styled text, and needs no HTML made for it.
PLAIN_TEXT = 0  # Text.PlainText
RICH_TEXT = 1  # Text.RichText: a filter's marks (backgrounds)
STYLED_TEXT = 4  # Text.StyledText: colours and attributes
#: The colours the model draws with until its view sets its theme's: a filter's
#: matches, the current match, and the time before a line (``#aarrggbb``).
DEFAULT_COLORS = {"match": "#6bd4a017", "currentMatch": "#c2e8780c", "time": "#6f737a"}
#: Renderings kept (by line number): a few screens of rows.
RENDER_CACHE = 512

#: A kept rendering: whether it was made for the current match's line, the text
#: a view draws, and its format.
_Rendered = tuple[bool, str, int]


class LineRenderer:
    """The look of an output pane's lines (see the module's docstring).

    ``marker`` marks a filter's matches (None: no filter); ``current`` is the
    row of the current match, whose matches take the ``currentMatch`` colour;
    ``show_times`` puts the time a line arrived before it; ``dark`` picks the
    ANSI palette for a dark pane; ``colors`` are CSS colours by name (see
    :data:`DEFAULT_COLORS`). Change them through :meth:`set_marker`,
    :meth:`restyle` and :meth:`set_current`, which forget the renderings that
    no longer hold.
    """

    def __init__(self) -> None:
        self.marker: Marker | None = None
        self.current = -1
        self.show_times = False
        self.dark = False
        self.colors = dict(DEFAULT_COLORS)
        self._palette = ansi.LIGHT_PALETTE
        self._cache: dict[int, _Rendered] = {}

    def set_marker(self, marker: Marker | None) -> None:
        """Mark a filter's matches with ``marker`` (None: no filter); every line anew."""
        self.marker = marker
        self.forget()

    def restyle(
        self,
        *,
        show_times: bool | None = None,
        dark: bool | None = None,
        colors: dict[str, str] | None = None,
    ) -> None:
        """Change what every line's look depends on (arguments left out stay) and
        forget every rendering."""
        if show_times is not None:
            self.show_times = show_times
        if dark is not None:
            self.dark = dark
            self._palette = ansi.DARK_PALETTE if dark else ansi.LIGHT_PALETTE
        if colors is not None:
            self.colors.update(colors)
        self.forget()

    def set_current(self, row: int) -> None:
        """Make ``row`` the current match's (-1: none). The lines it changes
        render anew when next read: each rendering says if it was the current one."""
        self.current = row

    def forget(self) -> None:
        """Forget every rendering (the lines were replaced, or renumbered)."""
        self._cache.clear()

    def shown(self, buf: LineBuffer, pos: int, row: int) -> tuple[str, int]:
        """What a view draws for ``buf.lines[pos]``, shown at ``row``, and its
        ``textFormat``: the raw text as ``PLAIN_TEXT`` when there is nothing to
        style, else :meth:`styled` as ``STYLED_TEXT`` (``RICH_TEXT`` while marking)."""
        number = buf.base + pos
        current = row == self.current
        kept = self._cache.get(number)
        if kept is not None and kept[0] == current:
            return kept[1], kept[2]
        raw = buf.raw(pos)
        if self._drawn_plain(buf, pos, raw):
            rendered: _Rendered = (current, raw, PLAIN_TEXT)
        else:
            html = self._styled_at(buf, pos, raw, row)
            rendered = (current, html, RICH_TEXT if self.marker is not None else STYLED_TEXT)
        if kept is None and len(self._cache) >= RENDER_CACHE:
            del self._cache[next(iter(self._cache))]  # the oldest kept
        self._cache[number] = rendered
        return rendered[1], rendered[2]

    def styled_at(self, buf: LineBuffer, pos: int, row: int) -> str:
        """The ``styled`` HTML of ``buf.lines[pos]``, shown at ``row``."""
        text, format_ = self.shown(buf, pos, row)
        return text if format_ != PLAIN_TEXT else self._styled_at(buf, pos, text, row)

    def _styled_at(self, buf: LineBuffer, pos: int, raw: str, row: int) -> str:
        # The plain text only where a marker needs it: it may not be stripped yet.
        plain = buf.text(pos) if self.marker is not None else raw
        return self.styled(raw, plain, row, buf.time(pos))

    def _drawn_plain(self, buf: LineBuffer, pos: int, raw: str) -> bool:
        """True if the line at ``pos`` is drawn as plain text: nothing to mark,
        no time before it, no escape sequence, control character or tab (the
        styled HTML expands tabs to the terminal's columns)."""
        return self.marker is None and not self.show_times and "\t" not in raw and buf.is_plain(pos)

    def styled(self, text: str, plain: str, row: int, when: float) -> str:
        """The ``styled`` HTML of a line: its raw ``text``; ``plain``, its
        stripped text (read only by a marker); ``row``, where it shows (-1: not a row)."""
        marker = self.marker
        if marker is None:
            html = ansi.to_html(text, self._palette)
        else:
            color = self.colors["currentMatch" if row == self.current else "match"]
            html = highlight.marked_html(text, marker(plain), color, self._palette)
        if self.show_times:
            return highlight.time_html(time_text(when, millis=True), self.colors["time"]) + html
        return html

    def partial(self, line: Line | None) -> str:
        """The unfinished line as a row renders (its time too, with times shown); "" for none."""
        if line is None:
            return ""
        html = self.styled(line.text, ansi.strip_ansi(line.text), -1, line.time)
        # A prompt's last space is where the answer goes: keep it (HTML drops it).
        return html[:-1] + "&nbsp;" if html.endswith(" ") else html
