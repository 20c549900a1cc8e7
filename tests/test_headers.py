"""The header a file's first messages share (``l4lite.mining.headers``): learnt from where its anchor sits, and
cut only from messages that have the anchor there."""

from __future__ import annotations

from l4lite.mining.headers import HeaderCut, learn_header

# lines as ingest leaves them (its own headers split off), copied from the Loghub 2k samples
BGL = ["- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 2005-06-03-15.42.50.675872 R02-M1-N0-C:J12-U11 RAS KERNEL INFO "
       "instruction cache parity error corrected",
       "- 1117869876 2005.06.04 R27-M1-N4-I:J18-U11 2005-06-04-00.24.36.222560 R27-M1-N4-I:J18-U11 RAS APP FATAL "
       "ciod: Error reading message prefix on CioStream socket to 172.16.96.116:33569, Link has been severed"]
HDFS = ["081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block blk_38865049064139660 "
        "terminating",
        "081109 204005 35 INFO dfs.FSNamesystem: BLOCK* NameSystem.addStoredBlock: blockMap updated: "
        "10.251.73.220:50010 is added to blk_7128370237687728475 size 67108864"]
HADOOP = ["[main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: Created MRAppMaster for application "
          "appattempt_1445144423722_0020_000001",
          "[RMCommunicator Allocator] org.apache.hadoop.mapreduce.v2.app.rm.RMContainerAllocator: Recalculating "
          "schedule, headroom=<memory:0, vCores:-27>"]


def test_a_level_column_and_its_component_are_learnt_and_cut() -> None:
    bgl = learn_header(BGL * 10)
    assert bgl == HeaderCut(9, 8, True)
    assert [bgl.strip(m) for m in BGL] == ["instruction cache parity error corrected",
                                          "ciod: Error reading message prefix on CioStream socket to "
                                          "172.16.96.116:33569, Link has been severed"]
    hdfs = learn_header(HDFS * 10)
    assert hdfs.strip(HDFS[0]) == "PacketResponder 1 for block blk_38865049064139660 terminating"
    assert hdfs.strip(HDFS[1]).startswith("BLOCK* NameSystem.addStoredBlock:")


def test_a_program_colon_is_learnt_with_bracketed_threads_as_one_token() -> None:
    cut = learn_header(HADOOP * 10)
    assert [cut.strip(m) for m in HADOOP] == [
        "Created MRAppMaster for application appattempt_1445144423722_0020_000001",
        "Recalculating schedule, headroom=<memory:0, vCores:-27>"]


def test_a_message_without_the_anchor_stays_whole() -> None:
    cut = learn_header(BGL * 10)
    other = "- 1117838570 2005.06.03 R02-M1-N0-C:J12-U11 a message of another layout with more tokens than that"
    assert cut.strip(other) == other
    assert cut.strip("short") == "short"


def test_messages_without_a_shared_anchor_are_not_cut() -> None:
    lines = ["Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121",
             "{'loss': 0.2051, 'grad_norm': 1.5, 'learning_rate': 9.77e-06, 'epoch': 0.53}",
             "Saving checkpoint to /ckpt/step_100", "NVRM: Xid (PCI:0000:b3:00): 79, pid=1234"]
    cut = learn_header(lines * 5)
    assert cut == HeaderCut()
    assert all(cut.strip(m) == m for m in lines)
    assert learn_header([]) == HeaderCut()
