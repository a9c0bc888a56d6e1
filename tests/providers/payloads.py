"""Generators of valid provider payloads (hypothesis strategies) and small binary fixtures
(image headers, a PDF), shared by the format tests. Every payload drawn here is one the real
provider accepts (the tests check that too, with rules.py and the SDK types)."""

from __future__ import annotations

import base64
import json
import struct

from hypothesis import strategies as st


def png(w: int, h: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", w, h) + b"\x08\x02\x00\x00\x00"


def gif(w: int, h: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", w, h) + b"\x00\x00\x00"


def jpeg(w: int, h: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, h, w, 3) + b"\x01\x22\x00" * 3
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def webp_vp8x(w: int, h: int) -> bytes:
    body = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00" + \
        (w - 1).to_bytes(3, "little") + (h - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body


def pdf(pages: int) -> bytes:
    objs = b"".join(b"%d 0 obj << /Type /Page /Parent 2 0 R >> endobj\n" % (k + 3)
                    for k in range(pages))
    head = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    return head + b"2 0 obj << /Type /Pages /Count %d >> endobj\n" % pages + objs + b"%%EOF\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


WORDS = ["alpha", "beta", "gamma", "delta", "file.py", "error", "the", "run", "tests", "fix"]


#: what real texts hold beside words: runs a pattern may read slowly, markup left open, other
#: scripts and marks, log and test lines, blank lines
ODD = ["=" * 40, "`" * 7, "```", "```py\n", "~~~", "\n\n\n", "   ", "\t", "a-" * 60,
       "../" * 30, "é", "中文", "🙂", "e\u0301", "\u200b", "<think>", "</think>", "{\"a\": [",
       "Traceback (most recent call last):\n", "  File \"a.py\", line 3, in f\n",
       "FAILED tests/test_a.py::test_b - AssertionError", "ERROR ", "pid=7 took 12ms ",
       "2026-12-06T04:04:47Z INFO ", "$ pytest -k test_retry_5851\n", "| a | b |\n", "> "]


@st.composite
def texts(draw, min_words: int = 1, max_words: int = 120) -> str:
    n = draw(st.integers(min_words, max_words))
    if draw(st.integers(0, 7)) == 7:  # words among odd pieces (plain words shrink nearer 0)
        pieces = [WORDS[draw(st.integers(0, len(WORDS) - 1))] if draw(st.booleans())
                  else ODD[draw(st.integers(0, len(ODD) - 1))] * draw(st.sampled_from([1, 3, 50]))
                  for _ in range(max(1, n // 4))]
        return draw(st.sampled_from([" ", "", "\n"])).join(pieces) + " end"
    words = [WORDS[draw(st.integers(0, len(WORDS) - 1))] + str(k % 7) for k in range(n)]
    if draw(st.integers(0, 4)) == 0 and n > 20:  # a code block the engine may cut
        body = "\n".join(f"line{k} = {k}" for k in range(n))
        return " ".join(words[:5]) + f"\n```py\n{body}\n```\n" + " ".join(words[5:10])
    return " ".join(words)


_extra = st.dictionaries(st.sampled_from(["x_trace", "metadata_tag", "vendor_hint"]),
                         st.integers(0, 9), max_size=2)


# --- OpenAI -------------------------------------------------------------------------------


@st.composite
def openai_user(draw) -> dict:
    msg: dict = {"role": "user"}
    if draw(st.booleans()):
        msg["content"] = draw(texts())
    else:
        parts: list[dict] = [{"type": "text", "text": draw(texts())}]
        for _ in range(draw(st.integers(0, 2))):
            w, h = draw(st.integers(1, 4000)), draw(st.integers(1, 4000))
            url = draw(st.sampled_from([f"data:image/png;base64,{b64(png(w, h))}",
                                        f"data:image/jpeg;base64,{b64(jpeg(w, h))}",
                                        "https://example.com/cat.png"]))
            img: dict = {"url": url}
            if draw(st.booleans()):
                img["detail"] = draw(st.sampled_from(["low", "high", "auto"]))
            parts.insert(draw(st.integers(0, len(parts))), {"type": "image_url", "image_url": img})
        if draw(st.integers(0, 5)) == 0:
            parts.append({"type": "input_audio", "input_audio": {
                "data": b64(b"\x00" * 3000), "format": "wav"}})
        if draw(st.integers(0, 5)) == 0:
            parts.append({"type": "file", "file": {
                "file_data": f"data:application/pdf;base64,{b64(pdf(2))}", "filename": "a.pdf"}})
        msg["content"] = parts
    if draw(st.booleans()):
        msg["name"] = "ann"
    return msg | draw(_extra)


def arguments() -> st.SearchStrategy[str]:
    """A call's arguments as a model writes them: a JSON object, and now and then what is
    not one (cut short, a list, a bare string, nothing), which OpenAI takes as any text."""
    return st.one_of(st.just('{"path": "a.py"}'), st.just('{"path": "a.py"}'),
                     st.sampled_from(['{"path": "a.py"', '["a.py"]', '"a.py"', "", "null"]))


@st.composite
def openai_payloads(draw) -> dict:
    msgs: list[dict] = []
    if draw(st.booleans()):
        role = draw(st.sampled_from(["system", "developer"]))
        content = draw(st.one_of(texts(max_words=30), st.builds(
            lambda t: [{"type": "text", "text": t}], texts(max_words=30))))
        msgs.append({"role": role, "content": content})
    call = 0
    for _ in range(draw(st.integers(0, 6))):
        msgs.append(draw(openai_user()))
        shape = draw(st.sampled_from(["text", "parts", "refusal", "tools", "legacy"]))
        if shape == "legacy":  # deprecated function calling: one call, its answer just after
            msgs.append({"role": "assistant", "content": draw(st.sampled_from([None, "Reading."])),
                         "function_call": {"name": "read_file", "arguments": json.dumps(
                             {"path": "b.py", "why": draw(texts(max_words=40))})}})
            msgs.append({"role": "function", "name": "read_file",
                         "content": draw(texts(max_words=300))})
            msgs.append({"role": "assistant", "content": draw(texts())})
        elif shape == "tools":
            ids = [f"call_{call + k}" for k in range(draw(st.integers(1, 3)))]
            call += len(ids)
            msgs.append({"role": "assistant", "content": draw(st.sampled_from([None, "Checking."])),
                         "tool_calls": [{"id": i, "type": "function", "function": {
                             "name": "read_file", "arguments": draw(arguments())}} for i in ids]})
            for i in ids:
                content = draw(texts(max_words=300))
                if draw(st.booleans()):
                    content = [{"type": "text", "text": content}]
                msgs.append({"role": "tool", "tool_call_id": i, "content": content})
            msgs.append({"role": "assistant", "content": draw(texts())})
        elif shape == "parts":
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": draw(texts())}]})
        elif shape == "refusal":
            msgs.append({"role": "assistant", "content": None, "refusal": "I can't help with that."})
        else:
            msgs.append({"role": "assistant", "content": draw(texts())} | draw(_extra))
    msgs.append(draw(openai_user()))  # the question
    return {"model": "gpt-4o", "messages": msgs, "temperature": 0.5} | draw(_extra)


# --- Anthropic ----------------------------------------------------------------------------

_CC = {"type": "ephemeral"}


@st.composite
def anthropic_user_blocks(draw) -> list[dict]:
    blocks: list[dict] = [{"type": "text", "text": draw(texts())}]
    if draw(st.integers(0, 3)) == 0:
        w, h = draw(st.integers(1, 5000)), draw(st.integers(1, 5000))
        data, media = draw(st.sampled_from([(png(w, h), "image/png"), (gif(w, h), "image/gif"),
                                            (webp_vp8x(w, h), "image/webp")]))
        blocks.insert(0, {"type": "image", "source": {"type": "base64", "media_type": media,
                                                      "data": b64(data)}})
    if draw(st.integers(0, 4)) == 0:
        blocks.insert(0, draw(st.sampled_from([
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                            "data": b64(pdf(3))}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                            "data": "a plain text document about beta"},
             "title": "notes"},
        ])))
    return blocks


@st.composite
def anthropic_payloads(draw) -> dict:
    cache_left = [4]

    def maybe_cc(block: dict) -> dict:
        if cache_left[0] and draw(st.integers(0, 6)) == 0:
            cache_left[0] -= 1
            return {**block, "cache_control": dict(_CC)}
        return block

    body: dict = {"model": "claude-sonnet-4-5", "max_tokens": 1024}
    system = draw(st.sampled_from(["none", "str", "blocks"]))
    if system == "str":
        body["system"] = draw(texts(max_words=30))
    elif system == "blocks":
        body["system"] = [maybe_cc({"type": "text", "text": draw(texts(max_words=30))})
                          for _ in range(draw(st.integers(1, 2)))]
    msgs: list[dict] = []
    pending_results: list[dict] = []
    call = 0
    for _ in range(draw(st.integers(0, 5))):
        user = [*pending_results, *[maybe_cc(b) for b in draw(anthropic_user_blocks())]]
        pending_results = []
        if len(user) == 1 and user[0]["type"] == "text" and draw(st.booleans()):
            msgs.append({"role": "user", "content": user[0]["text"]})
        else:
            msgs.append({"role": "user", "content": user})
        blocks: list[dict] = []
        if draw(st.integers(0, 3)) == 0:
            blocks.append({"type": "thinking", "thinking": draw(texts(max_words=40)),
                           "signature": "c2lnbmF0dXJl"})
        if draw(st.integers(0, 5)) == 0:
            blocks.append({"type": "redacted_thinking", "data": "ZW5jcnlwdGVk" * 4})
        blocks.append(maybe_cc({"type": "text", "text": draw(texts())}))
        if draw(st.booleans()):
            for _ in range(draw(st.integers(1, 3))):
                call += 1
                tid = f"toolu_{call}"
                blocks.append({"type": "tool_use", "id": tid, "name": "read_file",
                               "input": {"path": f"f{call}.py", "n": call}})
                result: dict = {"type": "tool_result", "tool_use_id": tid}
                kind = draw(st.sampled_from(["str", "blocks", "image", "error"]))
                if kind == "str":
                    result["content"] = draw(texts(max_words=300))
                elif kind == "blocks":
                    result["content"] = [{"type": "text", "text": draw(texts(max_words=300))}]
                elif kind == "image":
                    result["content"] = [{"type": "text", "text": draw(texts())},
                                         {"type": "image", "source": {
                                             "type": "base64", "media_type": "image/png",
                                             "data": b64(png(640, 480))}}]
                else:
                    result |= {"content": "command failed", "is_error": True}
                pending_results.append(result)
        msgs.append({"role": "assistant", "content": blocks})
    question = [*pending_results, *draw(anthropic_user_blocks())]
    msgs.append({"role": "user", "content": question})
    body["messages"] = msgs
    return body
