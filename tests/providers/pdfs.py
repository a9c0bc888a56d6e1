"""PDFs built for the tests, with the same page tree either way: every object plain (PDF 1.4)
or the tree packed in compressed object streams (PDF 1.5, pdfTeX's default)."""

from __future__ import annotations

import zlib
from collections.abc import Callable


def _tree(pages: int, per_node: int) -> dict[int, bytes]:
    """Objects of a catalog (1), a root /Pages (2) over inner /Pages nodes of ``per_node``
    pages each, and the pages. The root's /Count comes after its /Kids, as some writers put
    it."""
    objs: dict[int, bytes] = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    nodes = [list(range(k, min(k + per_node, pages))) for k in range(0, pages, per_node)]
    node_num = {k: 3 + k for k in range(len(nodes))}
    page_num = 3 + len(nodes)
    kids = " ".join(f"{node_num[k]} 0 R" for k in node_num)
    objs[2] = f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode()
    for k, members in enumerate(nodes):
        refs = " ".join(f"{page_num + p} 0 R" for p in members)
        objs[node_num[k]] = (f"<< /Type /Pages /Parent 2 0 R /Count {len(members)} "
                             f"/Kids [{refs}] >>").encode()
        for p in members:
            objs[page_num + p] = (f"<< /Type /Page /Parent {node_num[k]} 0 R "
                                  "/MediaBox [0 0 612 792] /Resources << >> >>").encode()
    return objs


def plain(objs: dict[int, bytes], version: bytes = b"1.4") -> bytearray:
    out = bytearray(b"%PDF-" + version + b"\n%\xe2\xe3\xcf\xd3\n")
    for num in sorted(objs):
        out += b"%d 0 obj\n" % num + objs[num] + b"\nendobj\n"
    return out


def classic(pages: int, per_node: int = 8) -> bytes:
    """Every object plain, an xref table at the end."""
    out = plain(_tree(pages, per_node))
    return bytes(out + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n")


def packed(pages: int, per_node: int = 8, per_stream: int = 10, filt: bytes = b"/FlateDecode",
           pack: Callable[[bytes], bytes] = zlib.compress,
           before: tuple[bytes, ...] = ()) -> bytes:
    """The catalog plain; the page tree in object streams of ``per_stream`` objects each,
    the root's stream last (pdfTeX writes the tree's root at the end). ``before``: streams'
    raw data put ahead of them (a bomb)."""
    objs = _tree(pages, per_node)
    inner = sorted(n for n in objs if n != 1)
    inner = inner[1:] + inner[:1]
    loose = {1: objs[1]}
    num = max(objs) + 1
    for data in before:
        loose[num] = stream(b"<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", data)
        num += 1
    for k in range(0, len(inner), per_stream):
        group = inner[k:k + per_stream]
        header, body = [], b""
        for n in group:
            header.append(b"%d %d" % (n, len(body)))
            body += objs[n] + b"\n"
        head = b" ".join(header) + b"\n"
        loose[num] = stream(b"<< /Type /ObjStm /N %d /First %d /Filter %s"
                            % (len(group), len(head), filt), pack(head + body))
        num += 1
    return bytes(plain(loose, b"1.5") + b"startxref\n0\n%%EOF\n")


def stream(head: bytes, data: bytes) -> bytes:
    return head + b" /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def bomb(inflated: int) -> bytes:
    """Zlib data that inflates to ``inflated`` zero bytes (about a thousandth of that)."""
    packer, chunk, out = zlib.compressobj(9), b"\0" * (1 << 20), []
    for _ in range(inflated >> 20):
        out.append(packer.compress(chunk))
    return b"".join(out) + packer.flush()
