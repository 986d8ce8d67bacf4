"""ascendbench.redact: a URL's password never leaves the process (issue 26 item 3); the masking agrees with
SQLAlchemy's own rendering of a URL without its password, and also covers what that rendering leaves in the
clear (an unencoded @ in the password, a password given as a query parameter, a URL inside text)."""

import json
import sys

import pytest
from sqlalchemy.engine import make_url

from ascendbench.commands.common import command_line, dump_json, resume_hint
from ascendbench.redact import mask_url, redact, redact_tree
from ascendbench.tuning.study import describe_storage

ORDINARY = [
    "postgresql://user:secret@host/db",
    "postgresql+psycopg://user:p%40ss%2Fw@db.example:5432/tune?sslmode=require",
    "postgresql://:secret@host/db",
    "postgresql://user:@host/db",
    "mysql+pymysql://user:secret@[::1]:3306/db",
    "oracle+oracledb://scott:tiger@host:1521/?service_name=x",
    "postgresql://user@host/db",  # no password: unchanged
    "postgresql://host:5432/db",
]


@pytest.mark.parametrize("url", ORDINARY)
def test_an_ordinary_url_is_masked_as_sqlalchemy_renders_it(url):
    assert mask_url(url) == make_url(url).render_as_string(hide_password=True)
    assert describe_storage(url) == mask_url(url)


@pytest.mark.parametrize("value, masked", [
    # SQLAlchemy would take "p" as the password and show "ss@host" as the host
    ("postgresql://user:p@ss@host/db", "postgresql://user:***@host/db"),
    ("postgresql://user:pa ss/w:d@host/db", "postgresql://user:***@host/db"),
    ("mysql://user:secret@host/db?charset=utf8&password=secret2", "mysql://user:***@host/db?charset=utf8&password=***"),
    ("postgresql://host/db?sslpassword=k3y;sslmode=require", "postgresql://host/db?sslpassword=***;sslmode=require"),
    ("--storage=postgresql://user:secret@host/db", "--storage=postgresql://user:***@host/db"),
    ("http://user:token@example.org/x", "http://user:***@example.org/x"),
    ("results/tuning/studies.journal", "results/tuning/studies.journal"),
    ("a?password=not-a-url", "a?password=not-a-url"),  # no URL, nothing to mask
])
def test_mask_url_masks_the_whole_password(value, masked):
    assert mask_url(value) == masked


def test_redact_masks_every_url_in_a_message_and_keeps_the_rest():
    text = ("Could not parse 'postgresql://u:secret@h/db' nor \"mysql://a:b2@c/d\"; see "
            "https://sqlalche.me/e/20/e3q8 and http://x:tok@y/?token=t0k&n=1 (user@host stays)")
    assert redact(text) == ("Could not parse 'postgresql://u:***@h/db' nor \"mysql://a:***@c/d\"; see "
                            "https://sqlalche.me/e/20/e3q8 and http://x:***@y/?token=***&n=1 (user@host stays)")
    assert redact("no url here: a:b@c") == "no url here: a:b@c"
    # a message quoting a masked storage (describe_storage) keeps its text; masking twice changes nothing
    once = redact(f"cannot open {mask_url('postgresql://u:pw@h/db?password=pw2')}: refused")
    assert once == "cannot open postgresql://u:***@h/db?password=***: refused" and redact(once) == once


def test_redact_tree_and_dump_json_mask_every_string_of_a_document():
    doc = {"command": ["ascendbench", "--storage", "postgresql://u:secret@h/db"], "n": 3, "ok": True,
           "notes": ["from postgresql://u:secret@h/db?password=secret"], "postgresql://u:secret@h/db": None}
    assert redact_tree(doc) == {"command": ["ascendbench", "--storage", "postgresql://u:***@h/db"], "n": 3,
                                "ok": True, "notes": ["from postgresql://u:***@h/db?password=***"],
                                "postgresql://u:***@h/db": None}
    text = dump_json(doc)
    assert "secret" not in text and json.loads(text) == redact_tree(doc)


@pytest.mark.parametrize("argv", [
    ["tune", "sort", "--storage", "postgresql://u:secret@h/db"],
    ["tune", "sort", "--storage=postgresql://u:secret@h/db"],
])
def test_the_command_line_and_the_resume_hint_hold_no_password(monkeypatch, argv):
    monkeypatch.setattr(sys, "argv", ["/usr/bin/ascendbench", *argv])
    command = command_line()
    assert command[:3] == ["ascendbench", "tune", "sort"] and "secret" not in " ".join(command)
    assert command[-1].endswith("postgresql://u:***@h/db")
    hint = resume_hint()
    assert "secret" not in hint and hint.endswith("(with the password in place of ***)")
    monkeypatch.setattr(sys, "argv", ["ascendbench", "tune", "sort", "--storage", "s.journal"])
    assert resume_hint() == "resume with: ascendbench tune sort --storage s.journal"


@pytest.mark.parametrize("key", ["%70assword", "PassWord", "%50ASSWORD", "ssl%70assword", "%2570assword", "p%61ss"])
def test_a_password_under_a_percent_encoded_or_mixed_case_query_key_is_masked(key):
    # SQLAlchemy decodes the key (%70assword is password) and logs in with the value: it must not be shown
    url = f"postgresql+psycopg://postgres@127.0.0.1:54329/st?{key}=PWxq7%40%3A%2F%25x&sslmode=require"
    masked = f"postgresql+psycopg://postgres@127.0.0.1:54329/st?{key}=***&sslmode=require"
    assert mask_url(url) == masked and mask_url(f"--storage={url}") == f"--storage={masked}"
    assert redact(f"cannot open '{url}': refused") == f"cannot open '{masked}': refused"
    assert redact_tree({"storage": url, url: [url]}) == {"storage": masked, masked: [masked]}
    assert "PWxq7" not in dump_json({"storage": url, "notes": [f"studies in {url}"]})


def test_other_query_keys_are_kept_and_a_password_after_one_is_still_masked():
    assert mask_url("postgresql://h/db?sslmode=require&application_name=a%20b") == (
        "postgresql://h/db?sslmode=require&application_name=a%20b")
    assert mask_url("postgresql://h/db?a=b?password=x") == "postgresql://h/db?a=b?password=***"
