"""The output pane's state, without Qt: the lines selected, and following the tail.

:class:`~procwindow.qt.ProcWindowModel` keeps one of each and turns their
changes into its Qt properties and signals; the decisions are made here, and
tested here without a window.

:class:`LineSelection`
    The rows selected: where the press was (the anchor) and where the pointer
    is (the cursor); they move with their lines when the oldest rows go.
:class:`FollowState`
    Whether the view follows the tail: it stops when the person scrolls away
    from the end and follows again once they are back there, from what the view
    reports (a scroll started or ended, the end reached, the scroll bar).
"""

from __future__ import annotations

__all__ = ["FollowState", "LineSelection"]


class LineSelection:
    """The output rows selected, ``start`` to ``end`` (-1, -1: none).

    Every change returns True if the selection changed (the model announces it).

    >>> sel = LineSelection()
    >>> sel.press(4, extend=False), sel.press(2, extend=True), (sel.start, sel.end)
    (True, True, (2, 4))
    >>> sel.text, sel.shift(3), (sel.start, sel.end)
    ('3 selected', True, (0, 1))
    """

    __slots__ = ("anchor", "cursor")

    def __init__(self) -> None:
        self.anchor = -1  # where the press was (-1: nothing selected)
        self.cursor = -1  # where the pointer is now

    @property
    def selected(self) -> bool:
        """True while some row is selected."""
        return self.anchor >= 0

    @property
    def start(self) -> int:
        """The first selected row, -1 for none."""
        return -1 if self.anchor < 0 else min(self.anchor, self.cursor)

    @property
    def end(self) -> int:
        """The last selected row, -1 for none."""
        return -1 if self.anchor < 0 else max(self.anchor, self.cursor)

    @property
    def count(self) -> int:
        """How many rows are selected."""
        return self.end - self.start + 1 if self.anchor >= 0 else 0

    @property
    def text(self) -> str:
        """The footer's ``3 selected`` ("" without a selection)."""
        return f"{self.count} selected" if self.anchor >= 0 else ""

    def select(self, anchor: int, cursor: int) -> bool:
        """Select from ``anchor`` to ``cursor`` (-1, -1: nothing)."""
        if (anchor, cursor) == (self.anchor, self.cursor):
            return False
        self.anchor, self.cursor = anchor, cursor
        return True

    def press(self, row: int, extend: bool) -> bool:
        """A press on ``row``; ``extend`` (Shift) keeps the first end."""
        return self.select(row if not extend or self.anchor < 0 else self.anchor, row)

    def drag(self, row: int, rows: int) -> bool:
        """The pointer, still pressed, reached ``row`` (ignored past the ``rows`` rows)."""
        if 0 <= row < rows and self.anchor >= 0:
            return self.select(self.anchor, row)
        return False

    def clear(self) -> bool:
        """Select nothing."""
        return self.select(-1, -1)

    def shift(self, rows: int) -> bool:
        """The oldest ``rows`` rows went: the selected lines are ``rows`` rows up
        now (a selection whose lines all went goes)."""
        if self.anchor < 0:
            return False
        anchor, cursor = self.anchor - rows, self.cursor - rows
        if max(anchor, cursor) < 0:
            return self.clear()
        return self.select(max(anchor, 0), max(cursor, 0))

    def clamp(self, rows: int) -> bool:
        """Only the first ``rows`` rows are left (the newest went): the selection
        keeps those of its lines that are (one whose lines all went goes).

        >>> sel = LineSelection()
        ... _ = sel.select(5, 9)
        ... sel.clamp(7), sel.text
        (True, '2 selected')
        """
        if self.anchor < 0 or self.end < rows:
            return False
        if self.start >= rows:
            return self.clear()
        return self.select(min(self.anchor, rows - 1), min(self.cursor, rows - 1))


class FollowState:
    """Whether the output view follows its tail (``following``), from what it reports.

    A method that returns True asks the view to go to its end now (the model's
    ``positionAtEnd``).

    >>> follow = FollowState()
    >>> follow.scroll_started(), follow.following
    (None, False)
    >>> follow.scroll_ended(near_end=True), follow.following
    (False, True)
    """

    __slots__ = ("following", "jumped")

    def __init__(self) -> None:
        self.following = True
        # The End key during a scroll still gliding: the scroll's end must not
        # leave the view "not following".
        self.jumped = False

    def jump(self, moving: bool) -> bool:
        """Follow the tail again, from now; ``moving``: a scroll is still gliding."""
        self.jumped = moving
        self.following = True
        return True

    def scroll_started(self) -> None:
        """The person scrolls (or the view went to a match): stop following."""
        self.jumped = False
        self.following = False

    def scroll_ended(self, near_end: bool) -> bool:
        """A scroll ended ``near_end`` (at the end, give or take a few lines) or not."""
        if self.jumped:
            self.jumped = False
            self.following = True
            return True
        self.following = near_end
        return False

    def scrolled_to_end(self, at_end: bool, scrolling: bool) -> None:
        """The view reached (or left) its end; reached while scrolling, it follows again."""
        if at_end and scrolling:
            self.following = True

    def scroll_bar(self, pressed: bool, near_end: bool) -> None:
        """Dragging the scroll bar stops following; releasing it near the end follows."""
        self.following = False if pressed else near_end
