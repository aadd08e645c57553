"""Trainer callbacks that run the same watch inside PyTorch Lightning and Hugging Face.

Import the one you need (``labcoat.watch.integrations.lightning`` or ``.huggingface``); each
imports its framework, which labcoat itself never requires.
"""
