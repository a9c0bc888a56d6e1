"""The pure core: token accounting, prompt layers, trimming, compression, zones, audit.

No I/O, no asyncio, no pygls, no clocks, no environment, no logging (import-linter enforces it).
Everything here takes its inputs as arguments and reports what it did.
"""
