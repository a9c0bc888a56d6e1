"""Subcommands of the `ctxlayer` CLI: one module each, with add_arguments(parser) and run(args)."""
