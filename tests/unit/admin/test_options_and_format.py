"""pyrmq admin without servers: option parsing and help like commons-cli, Java value formatting.

The expected help texts are mqadmin 5.5.0's own output (`mqadmin help <cmd>`), captured once.
"""

from __future__ import annotations

import pytest

from pyrmq.admin import cli
from pyrmq.admin.base import REGISTRY
from pyrmq.admin.broker import chm_order
from pyrmq.admin.javafmt import hashmap_order, jfmt
from pyrmq.admin.options import UsageError
from pyrmq.protocol.version import version_desc

UPDATE_TOPIC_HELP = """\
usage: mqadmin updateTopic [-a <arg>] -b <arg> | -c <arg>  [-h] [-n <arg>] [-o <arg>] [-p <arg>] [-r <arg>]
       [-s <arg>] -t <arg> [-u <arg>] [-w <arg>]
 -a,--attributes <arg>       attribute(+a=b,+c=d,-e)
 -b,--brokerAddr <arg>       create topic to which broker
 -c,--clusterName <arg>      create topic to which cluster
 -h,--help                   Print help
 -n,--namesrvAddr <arg>      Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'
 -o,--order <arg>            set topic's order(true|false)
 -p,--perm <arg>             set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]
 -r,--readQueueNums <arg>    set read queue nums
 -s,--hasUnitSub <arg>       has unit sub (true|false)
 -t,--topic <arg>            topic name
 -u,--unit <arg>             is unit topic (true|false)
 -w,--writeQueueNums <arg>   set write queue nums
"""

SUB_GROUP_P = """\
 -p,--groupRetryPolicy <arg>               the json string of retry policy ( exp:
                                           {"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"max
                                           ":7200000,"multiplier":2}}
                                           {"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000,100
                                           00]}} )
"""


def test_help_matches_mqadmin():
    assert REGISTRY["updateTopic"].options.help_text("mqadmin updateTopic") == UPDATE_TOPIC_HELP
    text = REGISTRY["updateSubGroup"].options.help_text("mqadmin updateSubGroup")
    assert SUB_GROUP_P in text
    assert "    --attributes <arg>                     attribute(+a=b,+c=d,-e)\n" in text
    assert (
        REGISTRY["printMsg"].options.table().splitlines()[0]
        == " -b,--beginTimestamp  <arg>   Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]"
    )


def test_all_29_core_commands_listed(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert len(REGISTRY) == 29 and set(cli.ORDER) == set(REGISTRY)
    assert "   updateTopic                         Update or create topic.\n" in out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["-x"], "Unrecognized option: -x"),
        ([], "Missing required options: [-b create topic to which broker, -c create topic to which cluster], t"),
        (["-t"], "Missing argument for option: t"),
        (
            ["-b", "a:1", "-c", "C", "-t", "T"],
            "The option 'c' was specified but an option from this group has already been selected: 'b'",
        ),
    ],
)
def test_parse_errors_read_like_commons_cli(argv, message):
    with pytest.raises(UsageError) as e:
        REGISTRY["updateTopic"].options.parse(argv)
    assert str(e.value) == message


def test_parse_values_and_attached_forms():
    o = REGISTRY["updateTopic"].options.parse(["-tT1", "--brokerAddr=1.2.3.4:10911", "-r", "4"])
    assert o == {"t": "T1", "b": "1.2.3.4:10911", "r": "4"}
    assert REGISTRY["topicList"].options.parse(["-c"]) == {"c": True}


def test_bad_flag_exits_1_with_usage(capsys):
    assert cli.main(["updateTopic", "-t", "T", "-x"]) == 1
    cap = capsys.readouterr()
    assert cap.out.startswith("usage: mqadmin updateTopic") and cap.err.strip() == "Unrecognized option: -x"
    assert cli.main(["noSuchCmd"]) == 1
    assert capsys.readouterr().out == "The sub command noSuchCmd not exist.\n"
    assert cli.main(["TOPICLIST", "-h"]) == 0  # names are case-insensitive, like mqadmin


def test_java_printf_and_values():
    assert jfmt("%-8s|%4d|%9.2f|%s|%s%n", "ab", 7, 1.5, True, None) == "ab      |   7|     1.50|true|null\n"
    assert jfmt("%s", 0.0) == "0.0" and jfmt("%s", {"a": 1}) == "{a=1}"
    assert version_desc(513) == "V5_5_0" and version_desc(409) == "V4_9_8" and version_desc(479) == "V5_3_3"
    assert version_desc(412) == "V5_0_0_SNAPSHOT" and version_desc(700) == "HIGHER_VERSION"


def test_hashmap_order_matches_java():
    # Java: new HashMap<>(128) filled in this order iterates as the mqadmin output shows
    props = {
        "UNIQ_KEY": "x",
        "CLUSTER": "c",
        "TAGS": "t",
        "KEYS": "k",
        "WAIT": "true",
        "MIN_OFFSET": "0",
        "MAX_OFFSET": "4",
    }
    assert list(hashmap_order(props, 128)) == [
        "UNIQ_KEY",
        "CLUSTER",
        "MIN_OFFSET",
        "TAGS",
        "KEYS",
        "WAIT",
        "MAX_OFFSET",
    ]


def test_chm_order():
    assert sorted(chm_order({"a": "1", "b": "2"})) == ["a", "b"]
