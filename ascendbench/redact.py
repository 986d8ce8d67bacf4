"""Credentials out of everything the tool writes or prints: the password of a URL is replaced by ``***``.

A database URL on the command line (``--storage postgresql://user:PASSWORD@host/db``) must not reach a result
document, a report, a log line or an error message. Two entry points, one rule:

- mask_url(value): one value that is, or holds, a URL (a command-line argument, ``--storage=URL``, a storage);
  the password runs to the last ``@`` of the value, so that one with an unencoded ``@``, ``/`` or space is
  masked whole (SQLAlchemy's make_url stops at the first ``@`` and would show the rest as the host).
- redact(text): free text (an error message, a traceback), where a password ends at white space or a quote.

Both also mask the value of query parameters named like a password (``?password=``, ``sslpassword=``, which
libpq and the MySQL drivers accept; the name percent-decoded and in any case, ``?%70assword=`` as SQLAlchemy
decodes it), which make_url(...).render_as_string(hide_password=True) leaves in the clear. Where a URL has no credentials, the text is returned unchanged.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote_plus

__all__ = ["MASK", "mask_url", "redact", "redact_tree"]

MASK = "***"

# scheme://user:  (RFC 3986 scheme; a user without ':', '/', '@' or white space)
_USER = r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@?#'\"]*:)"
# a whole value: the password runs to the value's last '@' (greedy, any character)
_IN_VALUE = re.compile(_USER + r"(?P<password>.*)(?P<at>@)", re.DOTALL)
# free text: to the last '@' before white space or a quote
_IN_TEXT = re.compile(_USER + r"(?P<password>[^\s'\"]*)(?P<at>@)")
# a query parameter (?key=value, &key=value, ;key=value); masked when its key, decoded, is named like a password
_QUERY = re.compile(r"(?P<head>[?&;](?P<key>[^\s'\"#=&;?]+)=)(?P<password>[^\s'\"#&;]+)")
# ?password=..., &sslpassword=..., ;pwd=..., in any case
_SECRET_KEY = re.compile(r"pass|pwd|secret|token", re.IGNORECASE)


def _secret_key(key: str) -> bool:
    """Whether the query key `key` names a password once percent-decoded: SQLAlchemy decodes ``%70assword`` to
    ``password`` and hands it to the driver. Decoded until it no longer changes (``%2570`` too: the safe side)."""
    for _ in range(8):
        if _SECRET_KEY.search(key):
            return True
        decoded = unquote_plus(key)
        if decoded == key:
            return False
        key = decoded
    return bool(_SECRET_KEY.search(key))


def _masked(userinfo: re.Pattern[str], text: str) -> str:
    if "://" not in text:  # no URL: nothing to mask (and no query parameter to mistake for one)
        return text
    text = userinfo.sub(lambda m: m["head"] + MASK + m["at"], text)
    # a value masked already is kept whole (in a message it may run into the text after it: "=***: reason")
    return _mask_query(text)


def _mask_query(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m["password"].startswith(MASK):
            return m[0]
        if _secret_key(m["key"]):
            return m["head"] + MASK
        return m["head"] + _mask_query(m["password"])  # "?a=b?password=x": a parameter inside the value

    return _QUERY.sub(one, text)


def mask_url(value: str) -> str:
    """`value` (a URL, or a command-line argument holding one such as ``--storage=URL``) with its passwords
    replaced by ``***``: the password of ``user:password@`` up to the value's last ``@``, and the values of
    query parameters named like a password. Anything without credentials is returned unchanged.

    Args:
        value: the text of one value.

    Returns:
        The masked value (str).
    """
    return _masked(_IN_VALUE, value)


def redact(text: str) -> str:
    """`text` (a message, a log line, a traceback) with the password of every URL in it replaced by ``***``
    (a password here ends at white space or a quote; see mask_url for one value).

    Args:
        text: free text.

    Returns:
        The masked text (str).
    """
    return _masked(_IN_TEXT, text)


def redact_tree(value: Any) -> Any:
    """A JSON-ready value (dicts, lists, strings, numbers) with mask_url applied to every string in it, keys
    included: the last guard before a document is written or printed."""
    if isinstance(value, str):
        return mask_url(value)
    if isinstance(value, dict):
        return {redact_tree(k) if isinstance(k, str) else k: redact_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_tree(v) for v in value]
    return value
