"""Sign-in throttling behind a proxy, through real sign-in requests.

Every request behind a TLS proxy arrives from the proxy's address: counted per connection, 20
failed sign-ins by anyone locked everyone out for 15 minutes.  With ``TRUSTED_PROXY_COUNT`` the
client's address is read from ``X-Forwarded-For`` (from the right, as many entries as there are
trusted proxies), and an address's lock holds only the usernames that failed from it.
"""

from __future__ import annotations

import ipaddress

import pytest
from django.core.cache import cache
from django.test import Client, RequestFactory, override_settings
from hypothesis import given, settings as hypothesis_settings
from hypothesis import strategies as st

from studio.web.proxy import client_address
from studio.workspaces.services import create_user

PROXY = "10.0.0.254"  # the TLS proxy: every request's connection comes from here
GUESSER, NEIGHBOUR = "203.0.113.7", "198.51.100.20"
PASSWORDS = {"zoe": "zoe's right password", "yan": "yan's right password",
             "tom": "tom's right password"}


@pytest.fixture
def behind_one_proxy(db, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.TRUSTED_PROXY_COUNT = 1
    settings.SIGN_IN_MAX_FAILURES = 5
    settings.SIGN_IN_MAX_FAILURES_PER_ADDRESS = 20
    settings.SIGN_IN_LOCKOUT_SECONDS = 900
    cache.clear()
    for username, password in PASSWORDS.items():
        create_user(username, password)
    yield
    cache.clear()


def sign_in(username: str, password: str, client_address: str, forwarded: str = ""):
    """A sign-in as the proxy passes it on: the connection is the proxy's, and the proxy has
    appended the address it saw to whatever X-Forwarded-For the client sent."""
    header = f"{forwarded}, {client_address}" if forwarded else client_address
    return Client(REMOTE_ADDR=PROXY).post(
        "/accounts/login/", {"username": username, "password": password},
        headers={"X-Forwarded-For": header})


def fail_twenty_times(address: str, usernames: list[str]) -> None:
    for attempt in range(20):
        username = usernames[attempt % len(usernames)]
        response = sign_in(username, "a wrong guess", address)
        assert response.status_code == 200, (attempt, response.status_code)


def test_twenty_failures_from_one_client_do_not_lock_out_another_behind_the_same_proxy(
        behind_one_proxy):
    fail_twenty_times(GUESSER, [f"ghost{n}" for n in range(20)])
    assert sign_in("zoe", PASSWORDS["zoe"], NEIGHBOUR).status_code == 302
    # The guesser's address is locked for the usernames it failed ...
    assert sign_in("ghost3", "anything", GUESSER).status_code == 429


def test_nor_a_user_who_has_not_failed_at_the_guessers_own_address(behind_one_proxy):
    fail_twenty_times(GUESSER, ["tom"] + [f"ghost{n}" for n in range(19)])
    assert sign_in("yan", PASSWORDS["yan"], GUESSER).status_code == 302
    # ... while a username that failed from there is refused there, the right password too,
    refused = sign_in("tom", PASSWORDS["tom"], GUESSER)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Too many failed sign-ins" in refused.content.decode()
    # and signs in from anywhere else (one failure is far from the account's limit).
    assert sign_in("tom", PASSWORDS["tom"], NEIGHBOUR).status_code == 302


def test_a_header_the_client_wrote_does_not_move_it_to_another_address(behind_one_proxy):
    # The guesser writes a new X-Forwarded-For each time; the proxy's entry stays its own.
    for attempt in range(20):
        response = sign_in(f"ghost{attempt}", "wrong", GUESSER,
                           forwarded=f"192.0.2.{attempt}, {NEIGHBOUR}")
        assert response.status_code == 200
    assert sign_in("ghost0", "wrong", GUESSER, forwarded="192.0.2.99").status_code == 429


def test_the_account_limit_still_holds_across_addresses(behind_one_proxy):
    for attempt in range(5):
        assert sign_in("zoe", "wrong", f"192.0.2.{attempt}").status_code == 200
    assert sign_in("zoe", PASSWORDS["zoe"], NEIGHBOUR).status_code == 429
    assert sign_in("yan", PASSWORDS["yan"], NEIGHBOUR).status_code == 302


def test_without_a_trusted_proxy_the_header_is_never_read(behind_one_proxy, settings):
    settings.TRUSTED_PROXY_COUNT = 0
    # Direct connections from one address, each claiming another forwarded address: one client.
    for attempt in range(20):
        response = Client(REMOTE_ADDR=GUESSER).post(
            "/accounts/login/", {"username": f"ghost{attempt}", "password": "wrong"},
            headers={"X-Forwarded-For": f"192.0.2.{attempt}"})
        assert response.status_code == 200
    again = Client(REMOTE_ADDR=GUESSER).post(
        "/accounts/login/", {"username": "ghost5", "password": "wrong"},
        headers={"X-Forwarded-For": "192.0.2.200"})
    assert again.status_code == 429


# ---------------------------------------------------------------------------------------------
# Reading the address

addresses = st.one_of(st.ip_addresses(v=4), st.ip_addresses(v=6)).map(str)
# Whatever a client may put in the header before the proxies' entries (no commas: a comma
# separates entries, so a client's comma only adds entries of its own on the left).
client_written = st.lists(st.text(st.characters(exclude_characters=",", codec="ascii"),
                                  max_size=20), max_size=4)


@hypothesis_settings(max_examples=300, deadline=None)
@given(trusted=st.integers(min_value=1, max_value=3), client=addresses,
       written=client_written, proxies=st.lists(addresses, min_size=3, max_size=3),
       connection=addresses)
def test_the_address_is_the_one_the_outermost_trusted_proxy_saw(
        trusted, client, written, proxies, connection):
    # client -> proxy 1 -> ... -> proxy N -> studio: proxy k appends the address it saw, the
    # client's for the first, the previous proxy's for the others.
    seen = [client] + proxies[:trusted - 1]
    header = ", ".join(written + seen)
    request = RequestFactory().get("/", REMOTE_ADDR=connection, HTTP_X_FORWARDED_FOR=header)
    with override_settings(TRUSTED_PROXY_COUNT=trusted):
        assert client_address(request) == str(ipaddress.ip_address(client))
    with override_settings(TRUSTED_PROXY_COUNT=0):
        assert client_address(request) == connection


@pytest.mark.parametrize("header, expected", [
    ("203.0.113.7:5678", "203.0.113.7"),
    ("[2001:db8::1]:443", "2001:db8::1"),
    ("2001:DB8:0:0::1", "2001:db8::1"),
    ("", "10.0.0.254"),           # no entry: the request did not pass the proxy
    ("unknown", "unknown"),       # not an address, still a client of its own
])
def test_a_forwarded_entry_is_read_as_an_address(settings, header, expected):
    settings.TRUSTED_PROXY_COUNT = 1
    request = RequestFactory().get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=header)
    assert client_address(request) == expected


def test_fewer_entries_than_trusted_proxies_fall_back_to_the_connection(settings):
    settings.TRUSTED_PROXY_COUNT = 2
    request = RequestFactory().get("/", REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_FOR=GUESSER)
    assert client_address(request) == PROXY
