"""Compiled SQL92 subscriptions per (topic, group), persisted in ``config/consumerFilter.json``.

Java: ``broker/filter/{ConsumerFilterManager,ConsumerFilterData}``. Heartbeats
register a group's non-TAG subscriptions (an expression that does not compile
is simply not registered, so a pull then gets FILTER_DATA_NOT_EXIST); when
the group's last consumer goes, its filters are marked dead and dropped
``filterDataCleanTimeSpan`` (24 h) later, at persist time. A subscription is
replaced only by a newer ``subVersion`` (the client's timestamp). On load,
dead times of live entries are set 30 s in the past, like Java.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pyrmq.broker.filter.bloom import BloomFilter, BloomFilterData
from pyrmq.broker.filter.sql92 import BooleanExpression, FilterParseError, compile_selector
from pyrmq.store.config import dumps_pretty, loads, persist_config_text, read_config_text

log = logging.getLogger("pyrmq.broker.filter")

MS_24_HOUR = 24 * 3600 * 1000


def is_tag_type(expression_type: str | None) -> bool:
    """Java ExpressionType#isTagType: null, empty or TAG."""
    return not expression_type or expression_type == "TAG"


def compile_expression(expression_type: str | None, expression: str | None) -> BooleanExpression:
    """Java FilterFactory.INSTANCE.get(type).compile(expr): only SQL92 is registered."""
    if expression_type != "SQL92":
        raise FilterParseError("java.lang.NullPointerException")  # FilterFactory.get(type) is null
    return compile_selector(expression)


@dataclass(slots=True, eq=False)
class ConsumerFilterData:
    consumer_group: str
    topic: str
    expression: str
    expression_type: str
    born_time: int
    dead_time: int = 0
    bloom_filter_data: BloomFilterData | None = None
    client_version: int = 0
    compiled_expression: BooleanExpression | None = field(default=None, repr=False)

    def is_dead(self) -> bool:
        return self.dead_time >= self.born_time

    def how_long_after_death(self, now: int) -> int:
        return now - self.dead_time if self.is_dead() else -1

    def to_json_tree(self) -> dict:
        """fastjson bean order (alphabetical); the compiled expression is transient."""
        tree: dict = {}
        if self.bloom_filter_data is not None:
            tree["bloomFilterData"] = {
                "bitNum": self.bloom_filter_data.bit_num,
                "bitPos": tuple(self.bloom_filter_data.bit_pos),
            }
        tree.update(
            {
                "bornTime": self.born_time,
                "clientVersion": self.client_version,
                "consumerGroup": self.consumer_group,
                "deadTime": self.dead_time,
                "expression": self.expression,
                "expressionType": self.expression_type,
                "topic": self.topic,
            }
        )
        return tree


class ConsumerFilterManager:
    def __init__(
        self,
        path: str,
        *,
        now: Callable[[], int],
        max_error_rate: int = 20,
        expect_consumer_num: int = 32,
        clean_time_span_ms: int = MS_24_HOUR,
    ) -> None:
        self.path = path
        self.now = now
        self.bloom_filter = BloomFilter(max_error_rate, expect_consumer_num)
        self.clean_time_span_ms = clean_time_span_ms
        #: topic -> group -> data (Java FilterDataMapByTopic)
        self.filter_data_by_topic: dict[str, dict[str, ConsumerFilterData]] = {}

    # ------------------------------------------------------------------ build / register

    def build(
        self, topic: str, group: str, expression: str, expression_type: str, client_version: int
    ) -> ConsumerFilterData | None:
        """Java ConsumerFilterManager#build: None for TAG or an expression that does not compile."""
        if is_tag_type(expression_type):
            return None
        try:
            compiled = compile_expression(expression_type, expression)
        except FilterParseError as e:
            log.error("parse error: expr=%s, topic=%s, group=%s, error=%s", expression, topic, group, e)
            return None
        return ConsumerFilterData(
            group, topic, expression, expression_type, self.now(), 0, None, client_version, compiled
        )

    def register_group(self, group: str, sub_list: Iterable) -> None:
        """Java register(group, subList): register each, then mark the filters of dropped topics dead."""
        subs = list(sub_list)
        for sd in subs:
            self.register(sd.topic, group, sd.sub_string, sd.expression_type, sd.sub_version)
        topics = {sd.topic for sd in subs}
        for data in self.get_by_group(group):
            if data.topic not in topics and not data.is_dead():
                data.dead_time = self.now()
                log.info("Consumer filter changed: %s, make illegal topic dead: %s", group, data.topic)

    def register(
        self, topic: str, group: str, expression: str | None, expression_type: str | None, client_version: int
    ) -> bool:
        if is_tag_type(expression_type) or not expression:
            return False
        assert expression_type is not None
        by_group = self.filter_data_by_topic.setdefault(topic, {})
        bloom = self.bloom_filter.generate(f"{group}#{topic}")
        old = by_group.get(group)
        if old is None:
            data = self.build(topic, group, expression, expression_type, client_version)
            if data is None:
                return False
            data.bloom_filter_data = bloom
            by_group[group] = data
            log.info("New consumer filter registered: %s %s %s", group, topic, expression)
            return True
        if client_version <= old.client_version:
            if client_version == old.client_version and old.is_dead():
                old.dead_time = 0
                return True
            return False
        change = old.expression != expression or old.expression_type != expression_type
        if old.bloom_filter_data != bloom:
            change = True
        if change:
            data = self.build(topic, group, expression, expression_type, client_version)
            if data is None:
                del by_group[group]
                return False
            data.bloom_filter_data = bloom
            by_group[group] = data
            return True
        old.client_version = client_version
        if old.is_dead():
            old.dead_time = 0
        return True

    def unregister(self, group: str) -> None:
        """Java unRegister(group): mark dead (kept until the clean time span passed)."""
        now = self.now()
        for by_group in self.filter_data_by_topic.values():
            data = by_group.get(group)
            if data is not None and not data.is_dead():
                data.dead_time = now

    # ------------------------------------------------------------------ queries

    def get(self, topic: str, group: str) -> ConsumerFilterData | None:
        by_group = self.filter_data_by_topic.get(topic)
        return by_group.get(group) if by_group else None

    def get_by_group(self, group: str) -> list[ConsumerFilterData]:
        return [g[group] for g in self.filter_data_by_topic.values() if group in g]

    # ------------------------------------------------------------------ persistence

    def clean(self) -> None:
        now = self.now()
        for topic in list(self.filter_data_by_topic):
            by_group = self.filter_data_by_topic[topic]
            for group in list(by_group):
                if by_group[group].how_long_after_death(now) >= self.clean_time_span_ms:
                    log.info("Remove filter consumer %s %s, died too long!", group, topic)
                    del by_group[group]
            if not by_group:
                del self.filter_data_by_topic[topic]

    def encode(self) -> str:
        self.clean()
        tree = {
            "filterDataByTopic": {
                topic: {"groupFilterData": {g: d.to_json_tree() for g, d in by_group.items()}, "topic": topic}
                for topic, by_group in self.filter_data_by_topic.items()
            }
        }
        return dumps_pretty(tree)

    def persist(self) -> None:
        try:
            persist_config_text(self.path, self.encode())
        except OSError as e:
            log.error("persist %s failed: %s", self.path, e)

    def load(self) -> None:
        got = read_config_text(self.path)  # the file, else its .bak (Java ConfigManager#load)
        if got is not None and got[0]:
            self.decode_tree(got[0])

    def decode(self, text: str) -> None:
        self.decode_tree(loads(text))

    def decode_tree(self, tree: dict) -> None:
        """Java decode: recompile; a bloom filter that changed drops everything persisted."""
        table: dict[str, dict[str, ConsumerFilterData]] = {}
        now = self.now()
        for topic, by_topic in (tree.get("filterDataByTopic") or {}).items():
            if not by_topic:
                continue
            groups = table.setdefault(topic, {})
            for group, d in (by_topic.get("groupFilterData") or {}).items():
                if not d:
                    continue
                bfd = d.get("bloomFilterData")
                bloom = (
                    BloomFilterData(tuple(int(x) for x in bfd.get("bitPos") or ()), int(bfd.get("bitNum", 0)))
                    if bfd
                    else None
                )
                data = ConsumerFilterData(
                    d.get("consumerGroup") or group,
                    d.get("topic") or topic,
                    d.get("expression") or "",
                    d.get("expressionType") or "",
                    int(d.get("bornTime", 0)),
                    int(d.get("deadTime", 0)),
                    bloom,
                    int(d.get("clientVersion", 0)),
                )
                try:
                    data.compiled_expression = compile_expression(data.expression_type, data.expression)
                except FilterParseError as e:
                    log.error("load filter data error, %s: %s", data, e)
                if not self.bloom_filter.is_valid(bloom):
                    log.info("Bloom filter is changed! So ignore all filter data persisted!")
                    return
                if data.dead_time == 0:
                    dead = now - 30_000
                    data.dead_time = data.born_time if dead <= data.born_time else dead
                groups[group] = data
        self.filter_data_by_topic = table
