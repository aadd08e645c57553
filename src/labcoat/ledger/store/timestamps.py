"""Timestamps as the ledger stores them: ISO-8601 text in UTC, microseconds, sortable as text."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

from labcoat.errors import InputError


def now() -> str:
    return format_utc(datetime.now(timezone.utc))


def format_utc(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a naive time is the user's local time
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def bound(value: str | date | datetime | None, *, name: str, end: bool = False) -> str | None:
    """A date or time given by the user, as a stored-format bound.

    A bare date means the whole day in local time: as a start bound its first instant, as an
    end bound (``end=True``) the first instant of the next day, used with ``<``.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return format_utc(value)
    if isinstance(value, date):
        day = value
    else:
        text = str(value).strip()
        try:
            if len(text) == 10:
                day = date.fromisoformat(text)
            else:
                return format_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))
        except ValueError:
            raise InputError(
                f"{name}: {text!r} is not a date; give YYYY-MM-DD or an ISO time such as "
                "2024-05-01T14:30"
            ) from None
    start = datetime(day.year, day.month, day.day)
    return format_utc(start + timedelta(days=1) if end else start)
