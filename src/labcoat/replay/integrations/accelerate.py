"""Hugging Face: stub replaced below."""


def attach(rec):
    return []
