"""ctxlayer: a context engine daemon for editor-integrated LLM chats."""

__version__ = "0.1.0"
