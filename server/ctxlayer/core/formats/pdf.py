"""How many pages a PDF has, read from its page tree: the root `/Type /Pages` node's `/Count`
is the total. Since PDF 1.5 a writer may put its objects, the page tree among them, in
compressed object streams (`/Type /ObjStm`, pdfTeX's default, and Word's, qpdf's): those are
inflated only when the tree is not in the plain bytes, and with a fixed budget of output, so a
decompression bomb costs at most that budget. Pure code: bytes in, a number out.
"""

from __future__ import annotations

import re
import zlib

#: The most bytes inflated from a PDF's object streams, all streams together. pdfTeX packs
#: about a hundred small dictionaries in a stream (some tens of KB inflated), and the page
#: tree comes near the end, so a book of a thousand pages stays well within this.
INFLATE_BUDGET = 8 << 20

#: an object's header, `12 0 obj`: its numbers bounded and not inside a longer run of digits
#: (a stream of digits, an ASCIIHex image, made `\d+` try every start again: 78 KiB of zeros
#: took 40 s)
_OBJ = re.compile(rb"(?<!\d)\d{1,10}\s+\d{1,5}\s+obj\b")
_PAGES = re.compile(rb"/Type\s*/Pages(?![A-Za-z])")
_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
#: a count or offset of more digits than any PDF holds is no count (`int` refuses past 4,300
#: digits: a 500)
_COUNT = re.compile(rb"/Count\s+(\d{1,9})(?!\d)")
_PARENT = re.compile(rb"/Parent(?![A-Za-z])")
_OBJSTM = re.compile(rb"/Type\s*/ObjStm(?![A-Za-z])")
_FLATE_ONLY = re.compile(rb"/Filter\s*(?:/FlateDecode|\[\s*/FlateDecode\s*\])(?![A-Za-z])")
_PARMS = re.compile(rb"/DecodeParms(?![A-Za-z])")
_FIRST = re.compile(rb"/First\s+(\d{1,9})(?!\d)")
_STREAM = re.compile(rb"stream\r?\n")


class _PageTree:
    """What the objects read so far say: the counts of root nodes (no /Parent), of inner
    nodes, how many page objects (leaves) were seen, and whether some objects went unread."""

    def __init__(self) -> None:
        self.roots: list[int] = []
        self.inner: list[int] = []
        self.leaves = 0
        self.partial = False

    def read(self, data: bytes, start: int, end: int) -> None:
        """One object's dictionary, data[start:end]."""
        if _PAGES.search(data, start, end):
            count = _COUNT.search(data, start, end)
            if count:
                nodes = self.inner if _PARENT.search(data, start, end) else self.roots
                nodes.append(int(count.group(1)))
        elif _PAGE.search(data, start, end):
            self.leaves += 1

    def pages(self) -> int | None:
        # An updated file may keep an older copy of the root beside the new one: the larger
        # count is taken, the side on which a request still fits the provider's window.
        if self.roots:
            return max(self.roots)
        if self.partial:  # what was read is a part of the tree: any count would be too low
            return None
        return max([*self.inner, self.leaves]) or None


def page_count(data: bytes) -> int | None:
    """The pages of the PDF in ``data`` as its page tree's root says; without a root, the
    most its other nodes or its page objects say; None when the tree cannot be read whole
    (an object stream encrypted, packed with a filter not read here, or past the budget)."""
    starts = [m.start() for m in _OBJ.finditer(data)]
    tree, streams = _PageTree(), []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(data)
        body = _STREAM.search(data, start, end)  # the dictionary ends where a stream begins
        head = body.start() if body else end
        tree.read(data, start, head)
        if body and _OBJSTM.search(data, start, head):
            streams.append((start, head, body.end(), end))
    if not tree.roots:
        _read_object_streams(tree, data, streams)
    return tree.pages()


def _read_object_streams(tree: _PageTree, data: bytes,
                         streams: list[tuple[int, int, int, int]]) -> None:
    """Inflate the FlateDecode object streams, one by one, until the tree's root is found or
    the budget is spent; a stream left unread (another filter, a predictor, bad data, past the
    budget) marks the tree partial."""
    budget = INFLATE_BUDGET
    for start, head, begin, end in streams:
        first = _FIRST.search(data, start, head)
        if (budget <= 0 or not first or not _FLATE_ONLY.search(data, start, head)
                or _PARMS.search(data, start, head)):
            tree.partial = True
            continue
        inflater = zlib.decompressobj()
        try:
            out = inflater.decompress(data[begin:end], budget)
        except zlib.error:
            tree.partial = True
            continue
        budget -= len(out)
        cut = bool(inflater.unconsumed_tail)
        tree.partial |= cut
        _read_object_stream(tree, out, int(first.group(1)), cut)
        if tree.roots:
            return


def _read_object_stream(tree: _PageTree, out: bytes, first: int, cut: bool) -> None:
    """Read each object of an inflated object stream: its header is pairs of (object number,
    offset from ``first``). An object that may have been cut by the budget is not read: a
    `/Count 12` cut to `/Count 1` would be a wrong count."""
    numbers = out[:first].split()
    try:
        offsets = sorted({int(n) for n in numbers[1::2]})
    except ValueError:
        tree.partial = True
        return
    bounds = [first + off for off in offsets if first + off <= len(out)] + [len(out)]
    last = len(bounds) - 2 if cut else len(bounds) - 1
    for k in range(last):
        tree.read(out, bounds[k], bounds[k + 1])

