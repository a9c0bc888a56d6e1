"""`ctxlayer schema`: the JSON Schema of every wire type."""

from __future__ import annotations

import json
import sys


def add_arguments(parser) -> None:
    parser.add_argument("--indent", type=int, default=2)
    parser.add_argument("--markdown", action="store_true",
                        help="print docs/protocol.md (generated from the structs) instead")


def run(args) -> int:
    if args.markdown:
        from ctxlayer.protocol_doc import render

        sys.stdout.write(render())
        return 0
    from ctxlayer.protocol import json_schema

    json.dump(json_schema(), sys.stdout, indent=args.indent or None, sort_keys=False)
    sys.stdout.write("\n")
    return 0
