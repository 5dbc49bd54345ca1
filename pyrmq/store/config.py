"""The broker's JSON config files under ``<storePathRootDir>/config/``, in Java's format.

Java: ``common/ConfigManager`` (load/persist), ``broker/topic/TopicConfigManager``
(``topics.json``), ``broker/offset/ConsumerOffsetManager`` (``consumerOffset.json``),
``broker/subscription/SubscriptionGroupManager`` (``subscriptionGroup.json``),
``broker/schedule/ScheduleMessageService`` (``delayOffset.json``). Spec §6.

What RocketMQ 5.5.0 writes (``tests/golden/store/config/java-5.5.0/``, captured
from a real broker; the spec's fastjson 1.x description is out of date):

* **fastjson2** ``JSON.toJSONString(bean, PrettyFormat)``: one tab per level,
  every object member and every list item on its own line, bean properties
  sorted by name, null properties and null map values left out, ``{}``/``[]``
  when empty, no newline at the end of the file;
* maps with ``Integer`` keys keep them **unquoted** (``3:4``), which is not JSON;
* primitive arrays (``long[]`` of ``CustomizedRetryPolicy.next``) stay on one
  line: ``[1000,2000]``. Here a Python ``tuple`` is written that way and a
  ``list`` like a Java ``List``/``Set``.

Older brokers (fastjson 1.x) put integer-keyed maps on one line,
``{0:250,1:251\\n\\t\\t}``; the reader takes every form, quoted integer keys too
(both fastjson versions read ``{"0":5}`` into ``Map<Integer,Long>``).

The typed beans reuse ``pyrmq.protocol`` (``DataVersion``,
``TopicConfig``, ``TopicConfigSerializeWrapper``): one definition per format,
so the broker can send the same objects in remoting bodies (compact form).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import orjson

from pyrmq.common.files import write_file_atomically
from pyrmq.common.java_lang import double_to_string
from pyrmq.protocol.bodies.common import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from pyrmq.protocol.fastjson import BodyDecodeError, FastJsonBody, bean_props, lenient_loads

__all__ = [
    "CONFIG_FILES",
    "ConfigFileError",
    "ConsumerOffsetSerializeWrapper",
    "CustomizedRetryPolicy",
    "DataVersion",
    "DelayOffsetSerializeWrapper",
    "ExponentialRetryPolicy",
    "GroupRetryPolicy",
    "LmqConsumerOffsetSerializeWrapper",
    "SimpleSubscriptionData",
    "SubscriptionGroupConfig",
    "SubscriptionGroupSerializeWrapper",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "config_dir",
    "config_path",
    "dumps_pretty",
    "load_config",
    "loads",
    "persist_config",
    "persist_config_text",
    "read_config_text",
]

log = logging.getLogger("pyrmq.store")

T = TypeVar("T", bound=FastJsonBody)


class ConfigFileError(Exception):
    """A config file (and its ``.bak``) exists but cannot be read."""


class TopicFilterType(enum.StrEnum):
    """Java: common/TopicFilterType (written by name)."""

    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"


# --------------------------------------------------------------------------- reader

#: a JSON string literal, or a bare integer object key (after ``{`` or ``,``)
_BARE_INT_KEY = re.compile(r'("(?:[^"\\]|\\.)*")|([{,]\s*)(-?\d+)(\s*:)')
_KEY_MARK = "\x00"


def _mark_key(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return str(m.group(1))
    return f'{m.group(2)}"\\u0000{m.group(3)}"{m.group(4)}'


def _unmark(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k.startswith(_KEY_MARK):
                k = int(k[1:])
            out[k] = _unmark(v)
        return out
    if isinstance(value, list):
        return [_unmark(v) for v in value]
    return value


def _decode_text(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # 4.9.x wrote these files in the JVM default charset (spec §0)
        log.warning("config file is not UTF-8; reading it as ISO-8859-1")
        return data.decode("latin-1")


def loads(data: bytes | str) -> Any:
    """Parse a config file in any fastjson dialect.

    Bare integer keys come back as ``int``, quoted keys as ``str``, so
    ``dumps_pretty(loads(x))`` reproduces what Java wrote. Raises
    ``BodyDecodeError``; anything else is a bug.
    """
    text = _decode_text(data)
    if _KEY_MARK in text or "\\u0000" in text:  # a NUL in a real string: keep the marker unambiguous
        return lenient_loads(text)
    try:
        return _unmark(orjson.loads(_BARE_INT_KEY.sub(_mark_key, text)))
    except orjson.JSONDecodeError:
        return lenient_loads(text)  # single quotes and other fastjson leniency


# --------------------------------------------------------------------------- writer


def _str(s: str) -> str:
    return orjson.dumps(s).decode()  # same escapes as fastjson2 (checked in tests)


def _write(value: Any, out: list[str], level: int) -> None:
    if value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif isinstance(value, enum.Enum):
        out.append(_str(value.name))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(double_to_string(value))
    elif isinstance(value, str):
        out.append(_str(value))
    elif isinstance(value, dict):
        _write_members(
            [
                (k if isinstance(k, int) and not isinstance(k, bool) else _key(k), v)
                for k, v in value.items()
                if v is not None
            ],
            out,
            level,
        )
    elif isinstance(value, tuple):
        # a Java primitive array: fastjson2 keeps it on one line even when pretty
        out.append("[")
        out.append(",".join(str(int(x)) if isinstance(x, int) else _str(str(x)) for x in value))
        out.append("]")
    elif isinstance(value, (list, set, frozenset)):
        items = list(value)
        if not items:
            out.append("[]")
            return
        pad = "\t" * (level + 1)
        out.append("[")
        for i, item in enumerate(items):
            out.append(",\n" if i else "\n")
            out.append(pad)
            _write(item, out, level + 1)
        out.append("\n")
        out.append("\t" * level)
        out.append("]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        _write_members([(_str(k), v) for k, v in bean_props(value)], out, level)
    else:
        raise TypeError(f"cannot write {type(value).__name__} to a config file")


def _key(k: Any) -> str:
    if isinstance(k, enum.Enum):
        return _str(k.name)
    return _str(str(k))


def _write_members(members: list[tuple[Any, Any]], out: list[str], level: int) -> None:
    if not members:
        out.append("{}")
        return
    pad = "\t" * (level + 1)
    out.append("{")
    for i, (k, v) in enumerate(members):
        out.append(",\n" if i else "\n")
        out.append(pad)
        out.append(str(k))  # already quoted for strings; bare for int keys
        out.append(":")
        _write(v, out, level + 1)
    out.append("\n")
    out.append("\t" * level)
    out.append("}")


def dumps_pretty(value: Any) -> str:
    """Serialise like fastjson2 ``JSON.toJSONString(obj, PrettyFormat)`` (Java 5.5.0 config files)."""
    out: list[str] = []
    _write(value, out, 0)
    return "".join(out)


# --------------------------------------------------------------------------- beans


@dataclass(slots=True)
class SimpleSubscriptionData(FastJsonBody):
    """Java: remoting/protocol/subscription/SimpleSubscriptionData."""

    topic: str | None = None
    expression_type: str | None = None
    expression: str | None = None
    version: int = 0


@dataclass(slots=True)
class ExponentialRetryPolicy(FastJsonBody):
    """Java: remoting/protocol/subscription/ExponentialRetryPolicy (times in ms)."""

    initial: int = 5_000
    max: int = 7_200_000
    multiplier: int = 2

    def next_delay_duration(self, reconsume_times: int) -> int:
        power: int = self.multiplier ** min(max(reconsume_times, 0), 32)
        return min(self.max, self.initial * power)


#: 1s 5s 10s 30s 1m 2m ... 10m 20m 30m 1h 2h, in ms (Java CustomizedRetryPolicy#next)
DEFAULT_RETRY_NEXT: tuple[int, ...] = tuple(
    s * 1000 for s in (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
)


@dataclass(slots=True)
class CustomizedRetryPolicy(FastJsonBody):
    """Java: remoting/protocol/subscription/CustomizedRetryPolicy. ``next`` is a ``long[]``."""

    next: tuple[int, ...] = DEFAULT_RETRY_NEXT

    def __post_init__(self) -> None:
        self.next = tuple(int(x) for x in self.next)  # long[] is written on one line

    def next_delay_duration(self, reconsume_times: int) -> int:
        return self.next[min(max(reconsume_times, 0) + 2, len(self.next) - 1)]


@dataclass(slots=True)
class GroupRetryPolicy(FastJsonBody):
    """Java: remoting/protocol/subscription/GroupRetryPolicy (``type`` by enum name)."""

    type: str = "CUSTOMIZED"
    exponential_retry_policy: ExponentialRetryPolicy | None = None
    customized_retry_policy: CustomizedRetryPolicy | None = None

    def retry_policy(self) -> ExponentialRetryPolicy | CustomizedRetryPolicy:
        """Java getRetryPolicy: the type's policy, the default customized one when it is unset."""
        if self.type == "EXPONENTIAL" and self.exponential_retry_policy is not None:
            return self.exponential_retry_policy
        if self.type == "CUSTOMIZED" and self.customized_retry_policy is not None:
            return self.customized_retry_policy
        return CustomizedRetryPolicy()


@dataclass(slots=True)
class SubscriptionGroupConfig(FastJsonBody):
    """A consumer group's settings. Java: remoting/protocol/subscription/SubscriptionGroupConfig.

    Defaults are Java's; ``broker_id`` 0 is MixAll.MASTER_ID.
    """

    group_name: str | None = None
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    group_retry_policy: GroupRetryPolicy = field(default_factory=GroupRetryPolicy)
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    group_sys_flag: int = 0
    consume_timeout_minute: int = 15
    subscription_data_set: list[SimpleSubscriptionData] | None = None
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class SubscriptionGroupSerializeWrapper(FastJsonBody):
    """``subscriptionGroup.json``. Java: SubscriptionGroupManager#encode (5.x adds forbiddenTable).

    The compact form is also Java's ``SubscriptionGroupWrapper`` remoting body
    (set ``forbidden_table`` to None to leave it out).
    """

    FILE_NAME: ClassVar[str] = "subscriptionGroup.json"

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    forbidden_table: dict[str, dict[str, int]] | None = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


def _split_topic_group(key: str) -> tuple[str, str] | None:
    """``topic@group`` -> (topic, group); None for broadcast keys (two ``@``), like Java's split."""
    parts = key.split("@")
    return (parts[0], parts[1]) if len(parts) == 2 else None


@dataclass(slots=True)
class ConsumerOffsetSerializeWrapper(FastJsonBody):
    """``consumerOffset.json``: ``topic@group`` -> {queueId: next offset to consume}.

    Java: broker/offset/ConsumerOffsetManager (serialised itself). ``groupTopicMap``
    is Java's derived getter, rebuilt on every write and ignored on read;
    ``pullOffsetTable`` is written by 5.5.0 and not read back by Java.
    4.9.x files have only ``offsetTable``.
    """

    FILE_NAME: ClassVar[str] = "consumerOffset.json"

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)
    data_version: DataVersion | None = field(default_factory=DataVersion)
    pull_offset_table: dict[str, dict[int, int]] | None = field(default_factory=dict)

    def group_topic_map(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for key in self.offset_table:
            tg = _split_topic_group(key)
            if tg is not None:
                topics = out.setdefault(tg[1], [])
                if tg[0] not in topics:
                    topics.append(tg[0])
        return out

    def to_tree(self) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        if self.data_version is not None:
            tree["dataVersion"] = self.data_version
        tree["groupTopicMap"] = self.group_topic_map()
        tree["offsetTable"] = self.offset_table
        if self.pull_offset_table is not None:
            tree["pullOffsetTable"] = self.pull_offset_table
        return tree

    def encode(self, *, standard: bool = False) -> bytes:
        from pyrmq.protocol.fastjson import fastjson_dumps

        return fastjson_dumps(self.to_tree(), standard=standard)

    to_json = encode


@dataclass(slots=True)
class LmqConsumerOffsetSerializeWrapper(ConsumerOffsetSerializeWrapper):
    """``lmqConsumerOffset.json``: with enableLmq Java keeps every offset here instead of in
    consumerOffset.json, those of %LMQ% groups in ``lmqOffsetTable`` (``topic@group`` -> offset,
    one queue). Java: broker/offset/LmqConsumerOffsetManager (serialised itself)."""

    FILE_NAME: ClassVar[str] = "lmqConsumerOffset.json"

    lmq_offset_table: dict[str, int] = field(default_factory=dict)

    def to_tree(self) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        for key, value in ConsumerOffsetSerializeWrapper.to_tree(self).items():
            tree[key] = value
            if key == "groupTopicMap":  # fastjson's order: the getters by name
                tree["lmqOffsetTable"] = self.lmq_offset_table
        return tree


@dataclass(slots=True)
class DelayOffsetSerializeWrapper(FastJsonBody):
    """``delayOffset.json``: delay level (1-based) -> next offset in SCHEDULE_TOPIC_XXXX queue level-1.

    Java: broker/schedule/DelayOffsetSerializeWrapper (5.x adds dataVersion).
    """

    FILE_NAME: ClassVar[str] = "delayOffset.json"

    offset_table: dict[int, int] = field(default_factory=dict)
    data_version: DataVersion | None = field(default_factory=DataVersion)


# --------------------------------------------------------------------------- files

#: file name -> wrapper class, Java BrokerPathConfigHelper / StorePathConfigHelper
CONFIG_FILES: dict[str, type[FastJsonBody]] = {
    "topics.json": TopicConfigSerializeWrapper,
    "consumerOffset.json": ConsumerOffsetSerializeWrapper,
    "delayOffset.json": DelayOffsetSerializeWrapper,
    "subscriptionGroup.json": SubscriptionGroupSerializeWrapper,
}
_FILE_OF: dict[type[FastJsonBody], str] = {cls: name for name, cls in CONFIG_FILES.items()}


def config_dir(store_root: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(store_root), "config")


def config_path(store_root: str | os.PathLike[str], cls: type) -> str:
    """``<root>/config/<file>`` for a wrapper class."""
    return os.path.join(config_dir(store_root), _FILE_OF[cls])


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    return _decode_text(data)


def read_config_text(
    path: str, parse: Callable[[str], Any] = loads, *, rename_corrupt: bool = True
) -> tuple[Any, str] | None:
    """Parsed content of ``path``, or of ``path.bak`` when the main file is missing,
    empty or unreadable, with the path actually used; None when neither has content.

    Java ConfigManager#load/#loadBak. Java deletes an unreadable main file; we
    rename it to ``<file>.corrupt`` (Java never reads that name) so the next
    persist cannot copy it over a good ``.bak`` (``rename_corrupt=False``: read-only
    tools leave it). Raises ``ConfigFileError`` when content exists but none of it
    parses (Java then refuses to start, or for a corrupt main without a ``.bak``
    silently starts empty, which we don't).
    """
    problems = []
    for p in (path, path + ".bak"):
        text = _read_text(p)
        if text is None or not text.strip():
            continue
        try:
            return parse(text), p
        except (BodyDecodeError, ValueError) as e:
            problems.append(f"{p}: {e}")
            if rename_corrupt:
                log.error("config file %s is unreadable (%s); trying the backup", p, e)
                if p == path:
                    with contextlib.suppress(OSError):
                        os.replace(p, p + ".corrupt")
    if problems:
        raise ConfigFileError("; ".join(problems))
    return None


def persist_config_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` keeping the previous version as ``path.bak``
    (Java ConfigManager#persist); at every instant the file is either the old or
    the new content."""
    write_file_atomically(path, text)


def _to_pretty(obj: Any) -> str:
    tree = obj.to_tree() if hasattr(obj, "to_tree") else obj
    return dumps_pretty(tree)


def decode_config(cls: type[T], text: str | bytes) -> T:
    """A wrapper from a file's text; raises ``BodyDecodeError`` on a bad shape."""
    obj = loads(text)
    if not isinstance(obj, dict):
        raise BodyDecodeError(f"{cls.__name__}: not a JSON object")
    wrapper: T = cls.from_obj(obj)
    return wrapper


def encode_config(obj: Any) -> str:
    """The file text Java 5.5.0 would write for ``obj``."""
    return _to_pretty(obj)


def load_config(store_root: str | os.PathLike[str], cls: type[T]) -> T | None:
    """Load ``<root>/config/<file of cls>`` (falling back to ``.bak``); None if absent."""
    got = read_config_text(config_path(store_root, cls), lambda t: decode_config(cls, t))
    return None if got is None else got[0]


def persist_config(store_root: str | os.PathLike[str], obj: Any) -> str:
    """Persist a wrapper like Java; returns the path written."""
    path = config_path(store_root, type(obj))
    persist_config_text(path, encode_config(obj))
    return path
