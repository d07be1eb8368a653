"""The shared workspace lease store on a Redis server (SPEC §5): every operation one Lua
script judged by the server's ``TIME`` (the twin of ``wsleasestore._transition``), so hosts
with skewed clocks agree; a server that may evict keys is refused on connect.
"""

from __future__ import annotations

import time
import uuid

from relconsole.engine.errors import UsageError
from relconsole.engine.gate.wslease.wsleasestore import (EvictingStore, LeaseStore, StoreUnavailable, WorkspaceLease, Outcome,
                                                 redact)


REDIS_TIMEOUT_SECONDS = 2.0


# One script for every operation, mirroring _transition; times come from the server's TIME.
# Numbers go back as strings (Redis truncates Lua numbers to integers); generations, near
# 2**51, are formatted with %.0f (tostring would round them to 14 digits).
_LUA = """
local op, holder, ttl, new_id = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local f = redis.call('HMGET', KEYS[1], 'id', 'holder', 'acquired_at', 'expires_at', 'generation')
local have = f[1] ~= false
local gen = math.max(tonumber(redis.call('GET', KEYS[2]) or '0'), have and tonumber(f[5]) or 0)
local live = have and tonumber(f[4]) > now
local mine = live and f[2] == holder
local kind = 'ok'
local function fmt(x) return string.format('%.6f', x) end
local function int(x) return string.format('%.0f', x) end
if op == 'acquire' and live and not mine then
  kind = 'held'
elseif op == 'acquire' and not mine then
  gen = math.max(gen + 1, now_us)
  redis.call('SET', KEYS[2], int(gen))
  f = {new_id, holder, fmt(now), fmt(now + ttl), int(gen)}
  have = true
  redis.call('HSET', KEYS[1], 'id', f[1], 'holder', f[2], 'acquired_at', f[3], 'expires_at', f[4], 'generation', f[5])
elseif (op == 'acquire' or op == 'renew') and mine then
  f[4] = fmt(now + ttl)
  redis.call('HSET', KEYS[1], 'expires_at', f[4])
elseif (op == 'renew' or op == 'release') and not mine then
  kind = 'notholder'
elseif op == 'release' then
  redis.call('DEL', KEYS[1])
end
if not have then return {kind, fmt(now), int(gen)} end
return {kind, fmt(now), int(gen), f[1], f[2], f[3], f[4], f[5]}
"""


class RedisLeaseStore(LeaseStore):
    """The shared store on a Redis server (``redis://`` or ``rediss://`` URL).

    Each operation is one Lua script (atomic on the server, judged by the server's TIME).
    Socket timeouts are :data:`REDIS_TIMEOUT_SECONDS` with no retries, so an unreachable
    server fails fast with :class:`StoreUnavailable`. Before its first operation the store
    reads the server's ``maxmemory-policy`` (``CONFIG GET``, else ``INFO memory`` when an
    ACL refuses CONFIG) and raises :class:`EvictingStore` for anything but ``noeviction``
    (issue 18). The check is made once per store object; a policy changed afterwards is
    caught by the next one, and generations still only rise meanwhile.
    """

    HASH_PREFIX = "relconsole:wslease:"
    GEN_PREFIX = "relconsole:wsgen:"

    def __init__(self, url: str):
        try:
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry
        except ImportError:
            raise UsageError(f"--lease-url {redact(url)} needs the Redis client: "
                             "pip install 'relconsole[redis]'") from None

        self.url = redact(url)  # what sheets and messages show: never a password
        self._errors = (redis.exceptions.RedisError, OSError)
        try:
            self._client = redis.Redis.from_url(
                url, socket_timeout=REDIS_TIMEOUT_SECONDS, socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
                retry=Retry(NoBackoff(), 0), decode_responses=True)
        except (ValueError, *self._errors) as exc:
            raise UsageError(f"bad Redis URL {redact(url)}: {exc}") from exc
        self._script = self._client.register_script(_LUA)
        self._refused = redis.exceptions.ResponseError  # NOPERM from an ACL, or CONFIG renamed away
        self._safe = False

    def _check_policy(self) -> None:
        """Raise :class:`EvictingStore` unless the server's ``maxmemory-policy`` is
        ``noeviction``; connection errors propagate (the callers turn them into StoreUnavailable)."""
        if self._safe:
            return
        try:
            policy = self._client.config_get("maxmemory-policy").get("maxmemory-policy")
            config_error = "it answered nothing"
        except self._refused as exc:
            policy, config_error = None, str(exc)
        if policy is None:
            try:
                policy = self._client.info("memory").get("maxmemory_policy")
            except self._refused as exc:
                raise EvictingStore(self.url, None, f"its maxmemory-policy cannot be read (CONFIG GET: "
                                                    f"{config_error}; INFO memory: {exc})") from None
        if policy is None:
            raise EvictingStore(self.url, None, f"its maxmemory-policy cannot be read (CONFIG GET: "
                                                f"{config_error}; INFO memory names none)")
        if policy != "noeviction":
            raise EvictingStore(self.url, policy, f"its maxmemory-policy is {policy}")
        self._safe = True

    def _apply(self, op: str, workspace: str, holder: str, ttl: float) -> Outcome:
        keys = [self.HASH_PREFIX + workspace, self.GEN_PREFIX + workspace]
        try:
            self._check_policy()
            reply = self._script(keys=keys, args=[op, holder, repr(ttl), uuid.uuid4().hex])
        except self._errors as exc:
            raise StoreUnavailable(self.url, exc) from exc
        now = float(reply[1])
        record = _from_fields(workspace, reply[3:], now - time.time()) if len(reply) > 3 else None
        return Outcome(reply[0], now, int(reply[2]), record)

    def _records(self) -> list[WorkspaceLease]:
        fields = ("id", "holder", "acquired_at", "expires_at", "generation")
        try:
            self._check_policy()
            seconds, micros = self._client.time()
            offset = seconds + micros / 1e6 - time.time()
            keys = list(self._client.scan_iter(match=self.HASH_PREFIX + "*", count=500))
            rows = [(key, self._client.hmget(key, fields)) for key in keys]
        except self._errors as exc:
            raise StoreUnavailable(self.url, exc) from exc
        return [_from_fields(key[len(self.HASH_PREFIX):], row, offset) for key, row in rows if row[0]]

    def close(self) -> None:
        self._client.close()


def _from_fields(workspace: str, row, offset: float) -> WorkspaceLease:
    lease_id, holder, acquired, expires, generation = row
    return WorkspaceLease(lease_id, workspace, holder, float(acquired), float(expires),
                          int(generation), clock_offset=offset)
