"""labcoat's exceptions.

Every error a user can cause derives from :class:`LabcoatError`; the CLI turns one into a
single line on stderr and exit code 2. :class:`InputError` also subclasses ``ValueError`` so
callers' existing ``except ValueError`` clauses keep working (scikit-learn does the same).
"""

from __future__ import annotations


class LabcoatError(Exception):
    """Base class for errors caused by what the user passed in, not by a labcoat bug."""

    exit_code = 2


class LabcoatNote(UserWarning):
    """Something labcoat did with the input that the user should hear about (a word read as a
    number); the CLI shows it as one ``labcoat: note:`` line on stderr."""


class InputError(LabcoatError, ValueError):
    """An argument or input file is not in a form labcoat can use.

    The message names the input, what was found, what was needed and, where there is one, the fix.
    """
