"""The real-jobs scoreboard: torchrun jobs run on CPUs with real frameworks and injected faults
(``fixtures/real_jobs``, made by ``benchmarks/real_jobs/generate.py``). Its numbers are pinned so that a
regression fails here; raise the floors when a change lifts them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l4lite.evaluate.scoreboard import evaluate, pipeline_analyzer, summarize

JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"

# From `l4lite eval fixtures/real_jobs` (79 jobs: plain DDP, Hugging Face Trainer, Lightning, DeepSpeed, 051-064
# from PyTorch-Ignite and Accelerate, and 065-078 from Ray Train and JAX multi-process, stacks the rules and
# readers were not written from): detect 1.0, top1 0.972, top3 1.0, phase 0.972, category 0.901, F1 0.730, no
# false incident of 8 healthy jobs.
# The cut-off nodes (049, 050), the SIGSTOPped ranks (041, 042, 075) and the SIGKILLed JAX process (074) get no
# category (truth network, software, host): their own lines are timeouts, the launcher's forced kill or nothing
# at all, which name no cause (074's "host" came from the coordination service's advice text, "scheduler events
# (e.g. preemption, eviction)", until that advice was read as a cascade's own words); 049 still blames the healthy
# node. Phase below 1: Ray and JAX jobs whose start-up lines are read as the failure
# (benchmarks/real_jobs/ray-jax-scores.md).
FLOORS_000_078 = {"status": 0.99, "top1": 0.98, "top3": 0.99, "phase": 0.97, "category": 0.90, "evidence_f1": 0.79}
# 079-088 (kinds the jobs above do not cover: torchelastic restarts, Lightning Fabric, a DataLoader worker's
# SIGSEGV, a wrong GLOO_SOCKET_IFNAME on one node, RLIMIT_AS, a stray barrier, a token id past the vocabulary, a
# failure in validation) were scored before any change made for them: top1 0.556, phase 0.778, category 0.444,
# F1 0.539. With them, all 89 jobs: top1 0.963, top3 0.975, phase 0.975, category 0.875, F1 0.784 (top1 0.950 before
# ``diagnose.spatial`` named 083's node).
FLOORS_000_088 = {"status": 0.99, "top1": 0.96, "top3": 0.97, "phase": 0.97, "category": 0.87, "evidence_f1": 0.78}
# 089-096 (a setup fault on one node against the same on every node, one rank's short record, a checkpoint write
# under a file-size limit, Accelerate and `srun --label` variants) were scored before any change made for them: top1
# 0.625, phase 0.875, category 0.750, F1 0.763; with ``diagnose.spatial`` top1 0.875. Their phase and category
# misses are open (091's dataset read before training is dated in training; 094 and 095's collate error of a
# short record reads as software, not data). All 97 jobs: top1 0.955, top3 0.966, phase 0.966, category 0.864,
# F1 0.782.
FLOORS_000_096 = {"status": 0.99, "top1": 0.98, "top3": 0.99, "phase": 0.96, "category": 0.88, "evidence_f1": 0.78}
# 097-102 (one rank's own fault of kinds the jobs above do not cover: a NaN caught by autograd's anomaly detection,
# a sharded checkpoint missing one rank's file, a corrupt record read by a DataLoader worker under Lightning and
# Accelerate, a rank deadlocked on a lock, a SIGKILLed Fabric rank) were scored before any change made for them:
# top1 0.667, phase 0.833, category 0.833, F1 0.744 (097 and 098 blamed no node). ``diagnose.spatial.rank_own``
# (one rank printed the error, a rank of its own node only lost it) names their node and 086/088's, with the
# data reading of 086/088's error, and ``spatial.merged_repeats`` names 096's; 099's worker error, on a node
# whose ranks log nothing after start-up, is dated in training by its own DataLoader frames while the job trained
# (``phasing``): all 103 jobs top1 0.989, top3 1.0, phase 0.968, category 0.883, F1 0.7798 (0.936, 0.947, 0.957,
# 0.862, 0.7798 before: the six new jobs' F1 takes the board's under 0.78); the first 97 top1 0.989, top3 1.0,
# phase 0.966, category 0.886, F1 0.782. 094 and 095's collate error of a short record, raised in the DataLoader's
# collate frames on one rank alone, reads as that rank's data (``diagnose.dataframes``), and 098's missing shard as
# storage (the launcher's account of the rank's torch.load, ``spatial.rank_own``): the 103 jobs' category 0.915.
# 000-102 after the training-health jobs 120-124 were added (identical job by job): top1 0.989, top3 1.0, phase
# 0.968, category 0.883, F1 0.7798, no false incident; all 108 jobs top1 0.990, phase 0.969, category 0.887, F1
# 0.770, one false incident (124, read as healthy since: below).
FLOORS_000_102 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.96, "category": 0.91, "evidence_f1": 0.779}
# 103-110 (a restart's two attempts in one `srun --label` file, a rank logging its failure as JSON lines or in ANSI
# colours, a checkpoint write killed by SIGXFSZ, a DataLoader worker stuck under a DataLoader timeout in DDP and
# Accelerate, a background checkpoint upload that fails ~500 lines of every rank's steps before the job hangs on
# it, a short record under Lightning) were scored before any change made for them: top1 1.0, phase 0.875, category
# 0.25, F1 0.694; after ``diagnose.dataframes`` (data-loading frames, the DataLoader's own timeout) and
# ``diagnose.threads`` (a stuck process's dead background thread) phase 1.0, category 0.75, F1 0.758. 104's JSON
# record holds its traceback in one escaped field, read as the traceback it carries since ``ingest.jsonlog``
# (software); 106's SIGXFSZ exit read as an abnormal exit (unknown), see below. All 111 jobs: top1 0.990, top3 1.0, phase
# 0.971, category 0.902, F1 0.778. With the training-health jobs 120-124, all 116 jobs: top1 0.990, top3 1.0,
# phase 0.971, category 0.905, F1 0.769, no false incident; with SIGXFSZ read as a write cut at the file-size
# limit (106, ``sigxfsz-file-size``) category 0.914, F1 0.766; with JSON-lines records read as the lines they
# carry (104, Ray Train's JSON logs) category 0.924, F1 0.771.
FLOORS_BEFORE_111 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.97, "category": 0.92, "evidence_f1": 0.765}
# 111-119 (one node's processes in another time zone, two stray records dated 1970 and 2099 reading ERROR on the
# healthy node just before the failure, a mismatched all-reduce, a rank SIGKILLed in its validation pass, one
# node's local copy of the resume checkpoint truncated, a log line cut by SIGKILL, a rank whose own output is lost
# aborting with SIGABRT, an overflowing micro-batch under gradient accumulation; 119 is 114 with rank 0's node in
# another time zone) were scored before any change made for them: top1 0.778, top3 1.0, phase 0.889, category
# 0.667, F1 0.609. 119's node five hours behind read as stopped five hours before the job's end (a hang on the
# wrong node, in training); with the hang's times and the job's span and phases on one clock (``scan.clocks``)
# 119 is right and 111's span is its own: top1 0.889, phase 1.0, category 0.778, F1 0.720. 113's every rank times
# out in the mismatched all-reduce and reads as unknown, as 085's stray barrier does; 117 below. All 125 jobs:
# top1 0.982, top3 1.0, phase 0.974, category 0.912, F1 0.767, no false incident.
FLOORS_BEFORE_125 = {"status": 1.0, "top1": 0.99, "top3": 0.99, "phase": 0.97, "category": 0.92, "evidence_f1": 0.775}
NEW_IN_111 = ("111", "112", "113", "114", "115", "116", "117", "118", "119")
# Jobs with one faulty node whose node l4lite does not yet put first (see FLOORS); any other miss fails.
# (068: a Ray worker stuck before its step writes nothing of its own; the hang reading names it (its files' rank
# from their start-up line, ``ingest.fileranks``), and the controller's re-raise of its peers' timeouts, a report
# of ranks' errors from the driver's node, no longer leads it: ``traits.controller_report``.)
# (078: JAX under `srun --label` names its host only in each process's "process 2/4 on compute-beta" banner,
# which ties the label to one of the job's known hosts, ``attribution.stream_hosts``.)
# (074 and 075: the JAX coordination service's "Task N heartbeat timeout" names the process, ``process_N.log``
# its rank.)
# (086, 088: one rank's sample holds a token id past the vocabulary; "index out of range in self" reads as data and
# model configuration disagreeing, job-wide, and one process alone printed it. The rank's node-mate, given the same
# settings and code, printed only the loss of its peer: the rank's own fault, its node named with the data reading
# of its error (``diagnose.spatial.rank_own``); one process's log alone still reads job-wide.)
# (085: rank 2 alone enters a barrier while the others wait in the step's collectives and every rank times out;
# the one rank whose timed-out collective differs from all the others' is named, ``detect.pending``.)
# (083, 090, 091: a node's own setup (an interface variable, a data disk never staged) that the ranks of that one
# node fail on, each in its own log, while the other node's ranks only lose them, names the node whatever the
# category, ``diagnose.spatial``; 089 and 092, the same setup wrong on every node, stay job-wide. 096 is 083 in one
# merged ``srun --label`` file: the node's two tracebacks carry its launcher task's label, not a rank, and two
# tracebacks of one error in a log other nodes write too are two processes, ``spatial.merged_repeats``.)
# (049 is 050's mirror image: the rendezvous host writes the summary and the other node's agent loses the store in
# both, whichever end was cut off, and no line names the interface; a node choice that fixes 049 breaks 050.)
# (117: the aborting rank wrote nothing of its own; its agent's exitcode -6 / SIGABRT reads as a cascade (on NCCL
# jobs the watchdog aborts a rank after its own timeout line), and the other node's summary names a rank that lost
# its peer. When every summary naming a culprit names such a victim, the summary of a rank that aborted without a
# line of its own names the peer they lost, ``diagnose.evidence.silent_abort``: all 125 jobs top1 0.991, category
# 0.921, F1 0.776.)
# 125-132 (a rank logging to its own file, a restart whose second attempt resumes from the checkpoint the first
# attempt's killed save cut short, Lightning's own anomaly detection, a MemoryError staging a checkpoint under
# `ulimit -v`, one rank's model config of another hidden size under DeepSpeed and DDP, a DataLoader worker stuck
# without a timeout, two unrelated faults a moment apart on two nodes) were scored before any change made for them:
# top1 0.750, top3 1.0, phase 0.750, category 0.500, F1 0.517. 126 read the restarted ranks' failure to read the cut
# file as the root (storage, load, the other node): the agent's report of the first attempt's killed worker, printed
# before the restart, now says what failed first (``diagnose.restarts``); 132's DDP parameter check in the model
# wrapper's constructor is set-up (``scan.phases``). All 133 jobs: top1 0.985, top3 1.0, phase 0.975, category
# 0.902, F1 0.772, no false incident. 128's MemoryError, the first exception of a chained traceback whose lines
# carry torchrun's rank tags, is read as the cause once the tags are set aside (category 0.910). Open: 130's stuck
# worker says nothing (data), 132's "appears not to match sizes" reads as software, not configuration; 129 below.
FLOORS_BEFORE_133 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.97, "category": 0.90, "evidence_f1": 0.77}
NEW_IN_125 = ("125", "126", "127", "128", "129", "130", "131", "132")
# 133-138 (one node's link dropping every packet it sends under DDP and Lightning, a rank leaving with `sys.exit(0)`
# under DDP and the HF Trainer, every rank resuming from another model's checkpoint, a node whose CXX names a
# compiler it does not have under torch.compile) were scored before any change made for them: top1 0.667, top3 1.0,
# phase 0.833, category 0.333, F1 0.273. The rank that exited 0 printed nothing and its agent recorded no failure;
# every other rank lost its peer: the quiet rank is the one that left (``detect.hang``, the rank number missing on
# the node with fewer ranks when it printed nothing with its rank on it) and keeps its reading, software
# (``localize``). A gloo read that times out in TCP itself (not reset by a dead peer) is the network path
# (``nccl-socket-timeout``), which also dates 133's traceback in training; the missing compiler is the node's
# environment (``build-toolchain-missing``, user_config, its node kept by ``diagnose.spatial``). After: top1 1.0,
# phase 1.0, category 1.0, F1 0.489. The first 133 jobs are identical job by job; all 139 jobs: top1 0.984, top3
# 1.0, phase 0.977, category 0.914, F1 0.759, no false incident.
FLOORS_BEFORE_139 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.97, "category": 0.91, "evidence_f1": 0.755}
NEW_IN_133 = ("133", "134", "135", "136", "137", "138")
# 139-145 (one node's /dev/shm too small for the DataLoader workers' batches under DDP, Accelerate and the HF
# Trainer, the rendezvous port held by a leftover process on the first node under Accelerate, the first node's name
# missing from the second node's /etc/hosts, and the faulty node's own processes in America/New_York: an exception
# and a hang) were scored before any change made for them: top1 0.857, top3 0.857, phase 0.714, category 0.429, F1
# 0.577 (143 and 144 right already: ``scan.clocks`` and the whole-log zone of a node). A worker's error re-raised in
# its rank ("Caught RuntimeError in DataLoader worker process 0.") read as the data's while the error it carries is
# torch's shared-memory file (``diagnose.wrapped``; ``torch-shm-file``: /dev/shm, user_config, in training, not the
# disk); Accelerate's own port check, the final line of its traceback, is the port in use (``dist-port-in-use``,
# job-wide as the corpus's threads label it); c10d's failed lookups of the master's name are the node's name
# resolution (``host-name-unresolved``). After: top1 1.0, phase 1.0, category 1.0, F1 0.603. The first 139 jobs are
# identical job by job; all 146 jobs: top1 0.985, top3 1.0, phase 0.978, category 0.919, F1 0.751 (142's one proof
# line among the ten lookups and timeouts its node printed, 145's among its workers' repeated tracebacks, take the
# board's F1 under 0.755), no false incident.
FLOORS_BEFORE_146 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.97, "category": 0.92, "evidence_f1": 0.75}
NEW_IN_139 = ("139", "140", "141", "142", "143", "144", "145")
# 146-153 (one rank's model with one more layer under DDP and Lightning, a node-local checkpoint disk that fills at
# the third save with each node saving its own copy, one node's copy of a token shard cut short under DDP and
# Lightning, a node's pids limit reached when the second epoch forks its DataLoader workers, a node missing one of
# the project's modules, a loss spike the run recovers from) were scored before any change made for them: top1
# 0.750, top3 0.750, phase 0.875, category 0.375, F1 0.578. DDP's parameter check fails on every rank and read
# job-wide; each rank's line names the rank it differs from, and the rank most of them name is the odd one
# (``diagnose.pointed``; ``ddp-model-mismatch``: the ranks' models differ, user_config, which also reads 132's
# "appears not to match sizes" as configuration). A generic exception raised in data-loading frames, placed on one
# node or one rank by who printed it, is that part's data (``diagnose.dataframes``: 148, 152); a fork refused with
# EAGAIN is the process-count limit (``rules.exceptions``, 149), and the DataLoader frames of its traceback date it
# in training though the save before it printed no end marker a marker knows (``diagnose.phasing``). After: top1 1.0,
# top3 1.0, phase 1.0, category 1.0, F1 0.581 (every rank printing DDP's check, the lines of each shown). The first
# 146 jobs are identical job by job but 132 (category right: 0.926); all 154 jobs: top1 0.986, top3 1.0, phase
# 0.979, category 0.930, F1 0.741, no false incident.
FLOORS_BEFORE_154 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.97, "category": 0.92, "evidence_f1": 0.74}
NEW_IN_146 = ("146", "147", "148", "149", "150", "151", "152", "153")
# 154-160 (a rank alone in a barrier while its peers all-reduce under DeepSpeed and the HF Trainer, the kernel's OOM
# killer on one rank under Accelerate and Lightning, the first node's clock 9 hours ahead of UTC while a rank fails
# under DeepSpeed and Lightning, one rank all-reducing a metrics tensor of another length under Accelerate) were
# scored before any change made for them: top1 0.857, top3 1.0, phase 0.857, category 0.571, F1 0.538. Under the HF
# Trainer two ranks time out (one in the barrier, one in backward) and the other two then lose them ("Connection
# closed by peer"), whose tracebacks still say where they waited (``detect.pending``); a rank waiting in a collective
# no other rank is in took a code path the others did not: the root, software, shown by its own lines and its
# launcher's exit line (``detect.desync``; also 085 and 113, read as unknown before). Lightning's ranks on the OOM
# node log nothing timed after start-up: the kernel's kill is dated by its node-mate's training-loop frames
# (``diagnose.phasing``). After: top1 1.0, phase 1.0, category 1.0, F1 0.657. The first 154 jobs are identical job
# by job but 085 and 113 (category right: 0.944); all 161 jobs: top1 0.987, top3 1.0, phase 0.980, category 0.947,
# F1 0.737, no false incident.
FLOORS_BEFORE_161 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.97, "category": 0.94, "evidence_f1": 0.735}
NEW_IN_154 = ("154", "155", "156", "157", "158", "159", "160")
# 161-167 (a node preempted, its launcher SIGTERMed from outside while the other node trains on, under Lightning and
# the HF Trainer; a node throttled to 1 ms of CPU a second mid-run, fail-slow, under Accelerate and DeepSpeed; one
# node's link degraded to 32 kbit/s under DeepSpeed; one node with an older accelerate than the HF Trainer needs; a
# checkpoint disk out of inodes with space left) were scored before any change made for them: top1 0.714, top3 1.0,
# phase 0.857, category 0.286, F1 0.219. The preempted node's launcher says it was told to stop ("Received 15 death
# signal"): before any other failure of the job that is the node taken away (``launcher-stopped``, host), after one
# it is the job's teardown (``diagnose.stopped``, ordered by the times lines carry themselves); every rank heard of
# timing out while one rank, the last of the last node, never printed names that rank as the stuck one
# (``detect.hang``, 163). After: top1 1.0, phase 1.0, category 0.571, F1 0.389. 168, the preemption under
# `accelerate launch`, was made after the mechanism: main put its node second (category software), this branch
# first (host). The first 161 jobs are identical job by job; all 169 jobs: top1 0.987, top3 1.0, phase 0.981,
# category 0.930, F1 0.738, no false incident.
FLOORS_BEFORE_169 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.97, "category": 0.92,
                     "evidence_f1": 0.735}
NEW_IN_161 = ("161", "162", "163", "164", "165", "166", "167", "168")
# 169-177, PyTorch FSDP2 (`fully_shard` over gloo, sharded torch.distributed.checkpoint saves, torchtitan's log
# layout): healthy, an exception, a SIGKILL, a hang, a NaN weight in one rank's shard, one rank's model with one more
# block (its all-gathers out of step with its peers', every rank times out), the first node's checkpoint mount
# read-only (its ranks' shard writes fail, and the checkpoint's collective report quotes their errors on every
# rank), a rank leaving with status 0, a learning rate off by 10^3. Scored before any change: top1 0.75, top3 0.875,
# phase 0.875, category 1.0, F1 0.607. A rank's error quoted under another rank's header (``(RANK 0)``) is a copy
# on the other node (``diagnose.traits.quoted_elsewhere``: not its own root, not a node that failed alike), and a
# checkpoint library's frames say save or load by their verbs (``scan.phases``): 175 right. When only lost peers
# remain, a start-up line every rank printed with one node's number apart from all the others' names that node, set
# up apart (``diagnose.oddsetup``: 174's "Model tinylm size: 185,024" against 135,040). After: top1 1.0, top3 1.0,
# phase 1.0, category 1.0, F1 0.628; the first 169 jobs identical job by job.
FLOORS_BEFORE_178 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.97, "category": 0.92,
                     "evidence_f1": 0.73}
NEW_IN_169 = ("169", "170", "171", "172", "173", "174", "175", "176", "177")
# 178-187, Megatron-Core on CPU (tensor parallel 2 within a node x data parallel 2 across the nodes over gloo,
# Megatron's indexed dataset and torch_dist checkpoints, Megatron-LM's progress line on the last rank): healthy, an
# exception, a SIGKILL, a hang, a NaN in one rank's shard of the output layer (Megatron's loss check stops its
# tensor-parallel group: that node), one rank started with tensor-parallel size 1 (every rank times out in the
# store building the groups), one node's copy of the dataset's .idx cut short, a tensor-parallel-2 checkpoint
# resumed with tensor parallel 1 (the padded vocabulary differs), the first node's checkpoint mount read-only, a
# learning rate off by 10^3. Scored before any change: top1 0.778, top3 0.889, phase 0.889, category 0.778, F1
# 0.702. A library's warning naming a setting witnesses no error of it (184's other node, which got further, warned
# of an environment variable: not a second node's print of the error), an installed framework's own data package is
# data loading (``megatron/core/datasets``: 184 data), and a sharded load's global shape check is a checkpoint that
# does not fit the model (185 user_config, above the failed-save reading of the bare ``CheckpointingException``).
# After: top1 0.889, top3 1.0, phase 0.889, category 1.0, F1 0.663 (184's evidence is now the destructor's
# traceback CPython printed after the real error on its node, 1 of 6 lines right); the first 178 jobs identical job
# by job; all 188: top1 0.983, top3 1.0, phase 0.977, category 0.937, F1 0.729 (the new jobs' F1 takes the board's
# under 0.73), Brier 0.058, AUROC 0.874.
FLOORS_BEFORE_188 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.97, "category": 0.92,
                     "evidence_f1": 0.725}
NEW_IN_178 = ("178", "179", "180", "181", "182", "183", "184", "185", "186", "187")
# 188-195, what the 188 jobs above had fewest of (network: 6 of 175 incidents; eval: 3): a node's link down under
# Fabric and AMP, one node dropping every packet under Megatron-Core and the HF Trainer, a link slowed to 32 kbit/s
# under FSDP2, the rendezvous host's name missing from one node's /etc/hosts under Lightning, an exception in a
# validation pass of the DDP loop, and a node whose job environment asks for CUDA with a CPU-only torch. Scored
# before any change: top1 0.875, top3 1.0, phase 0.875, category 0.5, F1 0.549, Brier 0.298. A traceback is no
# start-up line (``diagnose.oddsetup``: ranks timing out on send and recv differ by the transport's source line;
# 188 was read as one rank set up apart), a progress line is no node's own account of the failure
# (``diagnose.ownlines``: 191's loss-scale search read numerical), and a torch built without CUDA is the node's
# installation, met while the job sets up (194 user_config, init). After: top1 0.875, top3 1.0, phase 1.0,
# category 0.625, F1 0.499 (191's numerical reading had brought a timeout line of the truth's into its evidence),
# Brier 0.112; the first 188 jobs identical job by job; all 196: top1 0.978, top3 1.0, phase 0.978, category 0.923,
# F1 0.719, Brier 0.060, AUROC 0.898.
FLOORS_BEFORE_196 = {"status": 1.0, "top1": 0.975, "top3": 0.99, "phase": 0.97, "category": 0.92,
                     "evidence_f1": 0.725}
NEW_IN_188 = ("188", "189", "190", "191", "192", "193", "194", "195")
# 196-203, what the 196 jobs above had fewest of (by category, phase, stack and layout): a full checkpoint disk under
# Fabric, the OOM killer on one rank under AMP and FSDP2 and on a Lightning DataLoader worker, a corrupt record under
# Ignite, a node cut off under `accelerate launch`, a hang in Kubernetes pod logs, and a healthy run whose rank 0
# logs a refused metrics push with its traceback every 10 steps. Scored before any change: top1 1.0, top3 1.0, phase
# 1.0, category 0.857 (201 unknown), F1 0.678, no false incident. An untimed failure is not placed by time among
# another file's untimed markers (``diagnose.phasing``: 184's node failed building its dataset, init), and every
# rank of every node failing in a collective with none stuck, gone or raising its own error is the link between
# them (``diagnose.allwaited``: 049, 050, 188, 191, 201 network). After: the 8 jobs top1 1.0, phase 1.0, category
# 1.0, F1 0.678; the first 196: top1 0.984, top3 1.0, phase 0.984, category 0.945, F1 0.721, Brier 0.057, AUROC
# 0.916 (0.930 before: the link's four older jobs now read at 0.6, two of them right, two with the other node
# first); all 204: top1 0.984, top3 1.0, phase 0.984, category 0.947, F1 0.719, Brier 0.056, AUROC 0.916.
# When every rank waited on the link, the suspect node's own collective timeouts are root evidence
# (``diagnose.allwaited.own_timeouts``): 050, 191, 201 F1 0 -> 0.5, 0.5, 0.4; all 204 F1 0.719 -> 0.727.
FLOORS_BEFORE_204 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.98, "category": 0.94,
                     "evidence_f1": 0.725}
NEW_IN_196 = ("196", "197", "198", "199", "200", "201", "202", "203")
# 204-210, what the 204 jobs above had fewest of (by category, phase, stack, launcher and layout): a Slurm job step
# ended at its time limit (slurmstepd's `CANCELLED AT ... DUE TO TIME LIMIT`, SIGTERM to every task; job-wide,
# user_config), a node's link dropping every packet under Ignite, one rank's short record under Fabric, a rank
# SIGKILLed in Lightning's validation in an `srun --label` file, one node's cut checkpoint copy in pod logs, a corrupt
# record under AMP and a NaN weight under Ignite. Scored before any change: top1 1.0, top3 1.0, phase 1.0, category
# 0.857 (204 read as a node taken away, host), F1 0.620 (210's evidence the progress bar's `loss=nan`, not Ignite's
# `TerminateOnNan ... contains NaN or Inf`). A stop the scheduler says it made at the job's time limit takes that
# reason's category (``diagnose.stopped.stopped_for``) and nan-detected reads Ignite's line: the 7 jobs category 1.0,
# F1 0.791; no older job changed; all 211: top1 0.985, top3 1.0, phase 0.985, category 0.949, F1 0.729, Brier 0.055,
# AUROC 0.916.
FLOORS_BEFORE_211 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.98, "category": 0.945,
                     "evidence_f1": 0.727}
NEW_IN_204 = ("204", "205", "206", "207", "208", "209", "210")
# 211-212, a job that hung and was then ended by the scheduler's time limit: one rank asleep inside its step after the
# step's all-reduces (every rank logs its steps; the peers log the step and wait in the next one's gradient
# all-reduce), a 600 s collective timeout, the limit 40 s (211) and 60 s (212) later. Truth: the stuck rank's node,
# software, train. Scored on main: both read as a job-wide host fault (every launcher stopped alike; the scheduler's
# `CANCELLED AT` line has no header, takes the last step's stamp and explains no stop), top1 0, category 0. A node
# whose ranks' progress stops a step before their peers', then no progress for 20 step intervals (at least 10 s) with
# nothing timed out, lost or raised, is the stuck node (``detect.hang``), and a stop after it is its teardown, the
# scheduler's reason line with it (``diagnose.stopped.ended_late``): both top1 1.0, software, train, F1 0.5 (their
# truth also holds a peer's later step line and the limit line, shown as cascades). The 211 older jobs are identical
# job by job; all 213: top1 0.985, top3 1.0, phase 0.985, category 0.950, F1 0.7267 (0.729 on the 211: the two new
# jobs' F1 0.5 lowers the mean), Brier 0.055, AUROC 0.916.
FLOORS_BEFORE_213 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.98, "category": 0.949,
                     "evidence_f1": 0.726}
NEW_IN_211 = ("211", "212")
# 213-220, what the 213 jobs above had fewest of (by stack, category, phase and layout): no job had failed in its
# shutdown (a rank stuck at exit after the last step, before the run's closing barrier: 213 DDP, 214 Fabric in pod
# logs, 215 accelerate launch), eval 5 (216, an exception in Lightning's validation loop in pod logs), pods 5 and srun
# 9 (217, the OOM killer under Ignite in an srun file; 218, a node cut off under Lightning in an srun file), AMP 6
# (219, a full checkpoint disk) and Fabric 8 (220, the OOM killer). Scored on main: top1 1.0, top3 1.0, phase 0.75
# (214, 215 read as train: Fabric and the Accelerate script print their end line only after the barrier), category
# 0.875 (218 unknown: task 1's lines never name its host, so its ranks were no node and the every-rank-waited reading
# was not made), F1 0.732. A failure after the last progress line when that line states its step as the run's last
# (``step 40/40``) is in the shutdown (``diagnose.phasing.after_last_step``), and ranks no host places count as
# nodes of their own in ``diagnose.allwaited``: the 8 jobs phase 1.0, category 1.0, F1 0.816. The 213 older jobs
# are identical job by job but for 070 (phase now right: a write refused to a file named as a checkpoint is the
# save's, ``scan.phases``); all 221: top1 0.986, top3 1.0, phase 0.990, category 0.952, F1 0.730, Brier 0.113,
# AUROC 0.794 (main on the 221: phase 0.976, category 0.947, F1 0.727, Brier 0.113, AUROC 0.809: its wrong
# verdicts on 214, 215 and 218 came with low confidence). The launcher's exit and signal lines of the pid the kernel's
# OOM killer named are root beside the kill (``diagnose.killreport``): the nine OOM-kill jobs F1 0.667 -> 1.0, all
# 221 F1 0.730 -> 0.745, nothing else moves.
FLOORS_BEFORE_221 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.99, "category": 0.951,
                     "evidence_f1": 0.744}
NEW_IN_213 = ("213", "214", "215", "216", "217", "218", "219", "220")
# 221-229, what the 221 jobs above had fewest of: no job of OpenMMLab's MMEngine (its Runner, LoggerHook and
# CheckpointHook lines; 221 healthy, 222 a corrupt record, 223 a cut resume checkpoint, 224 an exception in its
# validation loop, 225 a node cut off, 226 a rank stuck at exit), phases load 9, eval 6, shutdown 3, categories network
# 15 and data 19, and healthy runs that look alarming (227: torch's C++ logging at INFO, whose store server reports a
# failed IPv6 bind with EADDRINUSE and the word Error before it binds IPv4; 228: a UserWarning on every rank at every
# step), and torchrun's per-rank files under a Slurm step (229: a corrupt record, `srun --label` file beside
# `--log-dir` folders; right on main and after). Scored on main (221-228): top1 1.0, phase 0.4, category 0.8, F1 0.671, one false incident of three (227, read as the
# port taken). 225's torch build banner (MMEngine prints it at start-up) read as a numerical fault: its compiler
# options (``-Wno-error=...``, ``-Wno-strict-overflow``) are options, not words (``detect.components``); 226's peers
# time out in an ``after_train`` hook's barrier after the last save, a shutdown frame (``scan.phases``); 224's
# ``run_iter`` frame, a name MMEngine's training and validation loops share, is the validation loop's when
# ``val_loop.run()`` called it; 227's bind that falls back to the other address family is advisory
# (``rules.advisory``). The 8 jobs: top1 1.0, phase 1.0, category 1.0, F1 0.771, no false incident. The 221 older jobs
# are identical job by job; all 229 (000-228): top1 0.986, top3 1.0, phase 0.991, category 0.953, F1 0.745, no false
# incident of 17 healthy jobs, Brier 0.114, AUROC 0.792 (main on them: phase 0.976, category 0.948, F1 0.743, one
# false incident, Brier 0.116, AUROC 0.777); all 230 with 229: top1 0.986, top3 1.0, phase 0.991, category 0.953, F1
# 0.746, Brier 0.113, AUROC 0.793. Root entries after (``diagnose.assemble.quoting_reports``, ``after_destructors``):
# a checkpoint report is one entry with the first rank error it quotes (175), and a destructor's ignored error after
# the failure is a cascade and is taken after the failed ranks' errors (184): F1 0.746 -> 0.749 (precision 0.791 ->
# 0.795, recall 0.746 -> 0.748), nothing else moves.
FLOORS_BEFORE_230 = {"status": 1.0, "top1": 0.98, "top3": 0.99, "phase": 0.99, "category": 0.951,
                     "evidence_f1": 0.748}
NEW_IN_221 = ("221", "222", "223", "224", "225", "226", "227", "228", "229")
# 230-239, what the 230 jobs above had fewest of: JAX had 7 jobs and no network, eval, data or read-only checkpoint
# fault, and no job whose coordination service itself died (230 a node dropping every packet, 231 a read-only
# checkpoint disk, 232 process 0, the service's host, SIGKILLed, 233 an exception in the validation pass, 234 a cut
# feature shard on one node's disk, 235 a healthy run warning at every step); no TensorFlow job at all
# (MultiWorkerMirroredStrategy: 236 healthy, 237 a worker SIGKILLed, 238 a read-only checkpoint disk on the chief,
# 239 a corrupt TFRecord on one node's disk). Scored on main (230-239): top1 0.875, phase 1.0, category 0.5, F1
# 0.645, no false incident. 233's primary was its node-mate's traceback cut short by the later abort, first by file
# name among untimed roots: untimed roots now go by the time their records inherit before their files' names
# (``diagnose.localize``), so the raising process's own exception leads (software, eval). A JAX process that dies
# without a word and that no heartbeat line names (232) is placed from its peers' coordination clients
# (``detect.hang``: the rank that said nothing while every other one was told another task died; no launcher, so no
# category). The 230 older jobs are identical job by job. After: top1 0.875, phase
# 1.0, category 0.625, F1 0.645. Open: 234 (numpy's "file seems not fully written" read as configuration, truth
# data), 237 (every worker's UnavailableError traceback reads job-wide; the gRPC lines naming task 3 are the only
# pointer), 232's category (nothing says the process was killed).
FLOORS = {"status": 1.0, "top1": 0.975, "top3": 0.985, "phase": 0.99, "category": 0.94, "evidence_f1": 0.74}
NEW_IN_230 = ("230", "231", "232", "233", "234", "235", "236", "237", "238", "239")
# the batches above in the order they were added: each batch's "before" leaves it and every later one out
ADDED = (NEW_IN_111, NEW_IN_125, NEW_IN_133, NEW_IN_139, NEW_IN_146, NEW_IN_154, NEW_IN_161, NEW_IN_169, NEW_IN_178,
         NEW_IN_188, NEW_IN_196, NEW_IN_204, NEW_IN_211, NEW_IN_213, NEW_IN_221, NEW_IN_230)


def jobs_before(board, batch: tuple[str, ...]) -> list:  # type: ignore[no-untyped-def]
    """The board's l4lite rows of the jobs it held before ``batch`` was added."""
    later = {job for added in ADDED[ADDED.index(batch):] for job in added}
    return [r for r in board.results if r.method == "l4lite" and r.job[:3] not in later]


# A link slowed to 32 kbit/s (190, truth network): the slow node's ranks time out while the other node's lose them
# once they leave, and the slow node's agent logs a keep-alive error, as eleven older jobs' agents do after a plain
# failure: nothing names its link.
OPEN_CATEGORY_188 = {"190-fsdp-netslow"}
# Category misses of 161-167 that the logs cannot settle: the throttled node (163, 164, truth host) printed nothing
# that names its CPU (its silence reads as a stuck rank, software or unknown), and the degraded link (165, truth
# network) shows as every rank's gloo timeout, as a hang does; the slow node's agent's keep-alive
# RendezvousTimeoutError is its one trace, and eight older jobs print that line on this busy machine too.
OPEN_CATEGORY_161 = {"163-accelerate-cpu_throttle", "164-deepspeed-cpu_throttle", "165-deepspeed-netslow"}
# (129: one DeepSpeed rank's model has another hidden size; the engine's broadcast of the parameters aborts a rank
# of the other node, which received a size it did not expect, and no line names the rank whose size differs.)
# (183, no longer open: one rank started with tensor-parallel size 1 builds other groups than its peers and every
# rank times out in the store at once, each on another group's key; the rank alone on the earliest group is read as
# the node, ``diagnose.storelag``.)
# (188: the second node's link down; with two nodes both agents' views of the lost store read alike, and the
# first node, whose agent reported its ranks' timeouts, is put first, as in 049.)
# (237: a TensorFlow worker SIGKILLed; every other worker's UnavailableError traceback reads alike, job-wide.)
OPEN_NODE_MISSES = {"049-ddp-netdown", "129-deepspeed-model_config", "188-fabric-netdown", "237-tf-sigkill"}
# Healthy jobs l4lite calls incidents (065-ray-healthy's "safe to ignore this error" traceback is an advisory
# line's, ``rules.advisory``); any other false incident fails. (124-accelerate-healthy: after both nodes finished,
# the second node's elastic agent logs "Error waiting on exit barrier" with a DistNetworkError traceback, the
# first node's agent, which hosts the store, having already exited. An agent enters its exit barrier only after
# its own workers succeeded, so what fails there is a cascade, ``rules.components.CASCADE``.)
OPEN_FALSE_INCIDENTS: set[str] = set()


@pytest.fixture(scope="module")
def board():  # type: ignore[no-untyped-def]
    analyzer = pipeline_analyzer()
    assert analyzer is not None
    jobs = sorted(p for p in JOBS.iterdir() if (p / "ground_truth.json").exists())
    assert len(jobs) >= 240
    return evaluate(jobs, {"l4lite": analyzer})


def test_the_real_jobs_scores_hold(board) -> None:  # type: ignore[no-untyped-def]
    summary = board.summary("l4lite")
    assert summary["errors"] == 0
    false = [r.job for r in board.results if r.method == "l4lite" and r.truth_status != "incident"
             and r.pred_status == "incident"]
    assert set(false) <= OPEN_FALSE_INCIDENTS
    low = {k: round(summary[k], 3) for k, floor in FLOORS.items() if summary[k] < floor}
    assert low == {}


def test_the_confidence_tells_right_verdicts_from_wrong(board) -> None:  # type: ignore[no-untyped-def]
    # 2026-12-06: Brier 0.053, AUROC 0.887 (the primary's score as confidence: 0.273 and 0.338, below chance)
    # The first 169 jobs keep theirs (Brier 0.059, AUROC 0.866); all 178 with the FSDP jobs: Brier 0.058, AUROC
    # 0.863.
    # 2026-12-06, the tiers read from verdicts the rules had not seen (held-out Brier 0.244 -> 0.214, AUROC 0.662
    # -> 0.716): the first 158 verdicts Brier 0.056 -> 0.122, AUROC 0.903 -> 0.775; all 190 0.056 -> 0.116, 0.916
    # -> 0.795 (with 204-210: 197 verdicts, 0.115, 0.795). Lowered on purpose: 28 of the 34 bare-exception
    # verdicts (now 0.40) are one planted message, all right, where out of sample such a verdict was right 10 of 31.
    before = summarize(jobs_before(board, NEW_IN_169))
    cal = before["calibration"]
    assert cal["n"] >= 140 and cal["brier"] <= 0.13 and cal["auroc"] >= 0.76
    cal = board.summary("l4lite")["calibration"]
    assert cal["brier"] <= 0.125 and cal["auroc"] >= 0.78


def test_the_jobs_before_111_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 116 jobs the board held before 111-119 were added (000-110, 120-124) keep the floors they had then."""
    before = jobs_before(board, NEW_IN_111)
    assert len(before) == 116
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_111.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_125_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 125 jobs the board held before 125-132 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_125)
    assert len(before) == 125
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_125.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_133_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 133 jobs the board held before 133-138 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_133)
    assert len(before) == 133
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_133.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_139_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 139 jobs the board held before 139-145 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_139)
    assert len(before) == 139
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_139.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_146_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 146 jobs the board held before 146-153 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_146)
    assert len(before) == 146
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_146.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_154_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 154 jobs the board held before 154-160 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_154)
    assert len(before) == 154
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_154.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_161_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 161 jobs the board held before 161-167 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_161)
    assert len(before) == 161
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_161.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_169_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 169 jobs the board held before the FSDP jobs were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_169)
    assert len(before) == 169
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_169.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_178_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 178 jobs the board held before the Megatron jobs were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_178)
    assert len(before) == 178
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_178.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_188_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 188 jobs the board held before 188-195 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_188)
    assert len(before) == 188
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_188.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_196_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 196 jobs the board held before 196-203 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_196)
    assert len(before) == 196
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_196.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_204_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 204 jobs the board held before 204-210 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_204)
    assert len(before) == 204
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_204.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_211_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 211 jobs the board held before 211-212 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_211)
    assert len(before) == 211
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_211.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_213_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 213 jobs the board held before 213-220 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_213)
    assert len(before) == 213
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_213.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_221_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 221 jobs the board held before 221-228 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_221)
    assert len(before) == 221
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_221.items() if summary[k] < floor}
    assert low == {}


def test_the_jobs_before_230_keep_their_floors(board) -> None:  # type: ignore[no-untyped-def]
    """The 230 jobs the board held before 230-239 were added keep the floors they had then."""
    before = jobs_before(board, NEW_IN_230)
    assert len(before) == 230
    summary = summarize(before)
    low = {k: round(summary[k], 3) for k, floor in FLOORS_BEFORE_230.items() if summary[k] < floor}
    assert low == {}


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("230-jax-netdrop", "dgx-b200-11", "network", "train"),
    ("231-jax-erofs", "compute-alpha", "storage", "checkpoint"),
    ("233-jax-eval_exception", "trn-sjc2-r08-n4", "software", "eval"),
    ("238-tf-erofs", "h100-sxm-031", "storage", "checkpoint"),
    ("239-tf-data", "dgx-b200-11", "data", "train")])
def test_a_jax_or_tensorflow_job_s_fault_is_read_on_its_node(board, job: str, node: str, category: str,
                                                            phase: str) -> None:  # type: ignore[no-untyped-def]
    """230-239: JAX processes and TensorFlow workers started without torchrun: a node dropping every packet, a
    read-only checkpoint disk (JAX's process 0, TensorFlow's chief), an exception in the validation pass that its
    node-mate's traceback, cut short by the later abort, must not outrank, a corrupt TFRecord on one node."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)


def test_a_dead_jax_coordinator_is_found_by_its_silence(board) -> None:  # type: ignore[no-untyped-def]
    """232: process 0, which hosts JAX's coordination service, SIGKILLed: no process names it (the service died
    with it), every other one is told another task died; the quiet one's node leads, in the training phase."""
    row = next(r for r in board.results if r.method == "l4lite" and r.job == "232-jax-sigkill")
    assert row.node_rank == 1 and row.phase_ok, (row.suspects, row.phase_ok)


@pytest.mark.parametrize("job", ["235-jax-warn_storm", "236-tf-healthy"])
def test_jax_warnings_and_tensorflow_start_up_lines_are_no_incident(board, job: str) -> None:  # type: ignore[no-untyped-def]
    """235 (JAX's float64 UserWarning at every step), 236 (TensorFlow's start-up warnings and C++ INFO lines with an
    uninitialised date): runs that ended normally."""
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.truth_status == "healthy" and row.pred_status == "healthy"


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("222-mmengine-data", "compute-alpha", "data", "train"),
    ("224-mmengine-eval_exception", "trn-sjc2-r08-n4", "software", "eval"),
    ("225-mmengine-netdown", "gpu-node-07", "network", "train"),
    ("226-mmengine-exit_hang", "a100-rack2-15", "software", "shutdown"),
    ("229-ddp-data_srunlog", "h100-sxm-044", "data", "train")])
def test_an_mmengine_or_slurm_step_job_s_fault_is_read_on_its_node(board, job: str, node: str, category: str,
                                                      phase: str) -> None:  # type: ignore[no-untyped-def]
    """222-226: MMEngine's Runner under torchrun: a corrupt record, an exception in its validation loop, a node cut
    off (its torch build banner names no fault), a rank stuck before the ``after_train`` hook's barrier; 229: a
    corrupt record in a Slurm step whose srun file and per-rank folders hold the same lines."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)


def test_an_mmengine_resume_from_a_cut_checkpoint_blames_no_node(board) -> None:  # type: ignore[no-untyped-def]
    """223: every rank fails loading the same truncated ``iter_20.pth``: storage, in the load, no node."""
    row = next(r for r in board.results if r.method == "l4lite" and r.job == "223-mmengine-corrupt_ckpt")
    assert row.suspects == [] and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)


@pytest.mark.parametrize("job", ["221-mmengine-healthy", "227-mmengine-debug_logs", "228-ddp-warn_storm"])
def test_alarming_healthy_runs_are_no_incident(board, job: str) -> None:  # type: ignore[no-untyped-def]
    """221 (MMEngine's start-up banner and deprecation warnings), 227 (torch's C++ INFO logging: a failed IPv6 bind,
    EADDRINUSE, before the store binds IPv4), 228 (a UserWarning on every rank at every step): runs that ended
    normally."""
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.truth_status == "healthy" and row.pred_status == "healthy"


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("213-ddp-exit_hang", "compute-alpha", "software", "shutdown"),
    ("214-fabric-exit_hang_k8s", "node0422", "software", "shutdown"),
    ("215-accelerate-exit_hang", "trn-sjc2-r08-n4", "software", "shutdown"),
    ("216-lightning-eval_exception_k8s", "gpu-node-12", "software", "eval"),
    ("217-ignite-host_oom_srun", "a100-rack2-15", "host", "train"),
    ("218-lightning-netdown_srun", "cpu-node-a", "network", "train"),
    ("219-amp-enospc", "llm-pretrain-7f9c4-worker-0", "storage", "checkpoint"),
    ("220-fabric-host_oom", "h100-sxm-044", "host", "train")])
def test_the_jobs_of_the_thinnest_phases_and_layouts_are_read_on_their_node(
        board, job: str, node: str, category: str, phase: str) -> None:  # type: ignore[no-untyped-def]
    """213-220: a rank stuck at exit after the last step (DDP, Fabric in pod logs, Accelerate), an exception in
    Lightning's validation in pod logs, OOM kills under Ignite (srun) and Fabric, a node cut off under Lightning in
    an srun file whose second task never names its host, a full checkpoint disk under AMP."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)


@pytest.mark.parametrize(("job", "node", "line"), [("211-ddp-stall_srun", "h100-sxm-044", 63),
                                                   ("212-ddp-stall_srun", "dgx-b200-03", 54)])
def test_a_hang_the_time_limit_ended_is_read_on_the_stuck_node(board, job: str, node: str,
                                                                line: int) -> None:  # type: ignore[no-untyped-def]
    """211-212: one rank stopped inside its step, its peers waited past it without a timeout, and the time limit
    ended the job later: the stuck rank's node, software, train, its last progress line the root, not the limit."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == ("software", "train", [node])
    assert truth["evidence"][0]["line"] == line
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)
    assert row.ev_pred_hit == row.ev_pred >= 1, (row.ev_pred_hit, row.ev_pred)


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("205-ignite-netdrop", "node0422", "network", "train"),
    ("206-fabric-short_sample", "trn-sjc2-r08-n4", "data", "train"),
    ("207-lightning-eval_sigkill_srun", "gpu-node-07", "host", "eval"),
    ("208-ddp-node_corrupt_ckpt_k8s", "a100-rack2-15", "storage", "load"),
    ("209-amp-data", "cpu-node-a", "data", "train")])
def test_the_jobs_of_the_thin_kinds_are_read_on_their_node(board, job: str, node: str, category: str,
                                                            phase: str) -> None:  # type: ignore[no-untyped-def]
    """205-209: a dropped link under Ignite, a short record under Fabric, a kill in Lightning's validation in an
    srun file, one node's cut checkpoint in pod logs, a corrupt record under AMP."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)


@pytest.mark.parametrize(("job", "category"), [("204-ddp-timelimit_srun", "user_config"),
                                               ("210-ignite-nan", "numerical")])
def test_a_time_limit_and_a_nan_every_replica_shares_blame_no_node(board, job: str, category: str) -> None:  # type: ignore[no-untyped-def]
    """204: Slurm ends the step at its time limit (every launcher signalled as slurmstepd says why); 210: DDP
    spreads one rank's NaN weight to every replica and Ignite's TerminateOnNan stops the run. Both job-wide, and
    their evidence is the scheduler's reason and the trainer's NaN stop."""
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.truth_status == "incident" and row.pred_status == "incident"
    assert not row.suspects and row.category_ok and row.phase_ok, (row.suspects, row.category_ok)
    assert row.ev_truth_hit == row.ev_truth, (row.ev_truth_hit, row.ev_truth)


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("196-fabric-enospc", "node0421", "storage", "checkpoint"),
    ("197-amp-host_oom", "trn-sjc2-r08-n3", "host", "train"),
    ("198-ignite-data", "gpu-node-12", "data", "train"),
    ("199-fsdp-host_oom", "a100-rack2-15", "host", "train"),
    ("200-lightning-worker_oom", "cpu-node-b", "host", "train"),
    ("201-accelerate-netdown", "llm-pretrain-7f9c4-worker-0", "network", "train"),
    ("202-ddp-hang_k8s", "h100-sxm-044", "software", "train")])
def test_the_jobs_the_set_had_fewest_of_are_read_on_their_node(board, job: str, node: str, category: str,
                                                               phase: str) -> None:  # type: ignore[no-untyped-def]
    """196-202: a full disk at a Fabric save, OOM kills under AMP, FSDP2 and a Lightning worker, a corrupt record
    under Ignite, a node cut off under Accelerate, a hang told only by its peers' timeouts in pod logs."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)


def test_a_refused_metrics_push_is_no_incident(board) -> None:  # type: ignore[no-untyped-def]
    """203: rank 0 logs a ConnectionRefusedError traceback at WARNING every 10 steps and trains on to the end."""
    row = next(r for r in board.results if r.method == "l4lite" and r.job == "203-ddp-push_refused")
    assert row.truth_status == "healthy" and row.pred_status == "healthy"


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("189-megatron-netdrop", "gpu-node-07", "network", "train"),
    ("192-lightning-no_master_host", "llm-pretrain-7f9c4-worker-1", "network", "init"),
    ("193-ddp-eval_exception", "h100-sxm-031", "software", "eval"),
    ("194-ddp-device_missing", "dgx-b200-11", "user_config", "init"),
    ("195-hf-netdrop", "compute-beta", "network", "train")])
def test_a_node_s_link_name_lookup_validation_or_device_is_read_on_that_node(
        board, job: str, node: str, category: str, phase: str) -> None:  # type: ignore[no-untyped-def]
    """188-195: the node whose link dropped every packet, whose /etc/hosts lacked the rendezvous host, whose rank
    raised in a validation pass, whose torch was built without CUDA."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)


def test_a_cut_or_slowed_link_names_its_node_without_a_category(board) -> None:  # type: ignore[no-untyped-def]
    """190 (a link slowed to 32 kbit/s) and 191 (the rendezvous host's link down) name their node in the training
    phase; 190's category is open (``OPEN_CATEGORY_188``); 191's loss-scale search is no numerical fault, and its
    ranks all waiting on one another read as the link (``diagnose.allwaited``), as 188's and 201's do."""
    rows = {r.job: r for r in board.results if r.method == "l4lite" and r.job in
            OPEN_CATEGORY_188 | {"188-fabric-netdown", "191-amp-netdown", "201-accelerate-netdown"}}
    assert len(rows) == 4
    for job in ("190-fsdp-netslow", "191-amp-netdown", "201-accelerate-netdown"):
        assert rows[job].node_rank == 1 and rows[job].phase_ok, (job, rows[job].suspects)
    for job in ("188-fabric-netdown", "191-amp-netdown", "201-accelerate-netdown"):
        assert rows[job].category_ok, job
    assert all(r.phase_ok and r.pred_status == "incident" for r in rows.values())


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("179-megatron-exception", "trn-sjc2-r08-n4", "software", "train"),
    ("180-megatron-sigkill", "gpu-node-07", "host", "train"),
    ("181-megatron-hang", "a100-rack2-15", "software", "train"),
    ("182-megatron-nan", "cpu-node-a", "numerical", "train"),
    ("186-megatron-erofs", "compute-alpha", "storage", "checkpoint")])
def test_a_megatron_job_s_fault_is_read_on_its_node(board, job: str, node: str, category: str,
                                                    phase: str) -> None:  # type: ignore[no-untyped-def]
    """179-186 under Megatron-Core; 182: Megatron's loss check stops the two ranks of the NaN's tensor-parallel
    group (one node) before the gradient all-reduce."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)


def test_a_node_s_cut_index_file_is_that_node_s_data(board) -> None:  # type: ignore[no-untyped-def]
    """184: the second node's copy of Megatron's .idx is cut short; its two ranks fail opening it, then a
    destructor's ignored exception follows each traceback, and the first node's ranks, which got to training,
    warn of an environment variable before they lose their peers: that node, data. (Its phase is open: the
    ranks fail before training, but their untimed tracebacks carry their launcher's start-up time, and the
    other node's rank 0 had printed "training ..." at that time.)"""
    row = next(r for r in board.results if r.method == "l4lite" and r.job == "184-megatron-idx_truncated")
    assert row.node_rank == 1 and row.category_ok, (row.suspects, row.category_ok)


def test_the_megatron_job_wide_faults_blame_no_node(board) -> None:  # type: ignore[no-untyped-def]
    """178 is healthy; 185 (a tensor-parallel-2 checkpoint resumed with tensor parallel 1: Megatron pads the
    vocabulary by the tensor-parallel size, so the output layer's global shape differs) is the job's setting, in
    the load; 187 (a learning rate off by 10^3) is the job's numbers."""
    rows = {r.job: r for r in board.results if r.method == "l4lite" and r.job[:3] in ("178", "185", "187")}
    assert rows["178-megatron-healthy"].pred_status == "healthy"
    for job in ("185-megatron-layout_ckpt", "187-megatron-diverge"):
        assert rows[job].pred_status == "incident" and rows[job].category_ok and rows[job].phase_ok, job
        assert rows[job].node_ok, job


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("170-fsdp-exception", "trn-sjc2-r08-n4", "software", "train"),
    ("171-fsdp-sigkill", "gpu-node-07", "host", "train"),
    ("172-fsdp-hang", "a100-rack2-15", "software", "train"),
    ("174-fsdp-shard_mismatch", "llm-pretrain-7f9c4-worker-1", "user_config", "train"),
    ("175-fsdp-erofs", "h100-sxm-031", "storage", "checkpoint"),
    ("176-fsdp-exit0", "dgx-b200-11", "software", "train")])
def test_an_fsdp_job_s_fault_is_read_on_its_node(board, job: str, node: str, category: str,
                                                 phase: str) -> None:  # type: ignore[no-untyped-def]
    """170-176 under FSDP2; 174: one rank's model has one more block, every rank times out, and only that rank's
    start-up line of its model's size differs; 175: the first node's shard writes fail on a read-only mount and the
    checkpoint's collective report quotes them on every rank: the quoted ranks' node, in the checkpoint phase."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)


def test_the_fsdp_job_wide_faults_blame_no_node(board) -> None:  # type: ignore[no-untyped-def]
    """169 is healthy; 173 (a NaN weight in one rank's shard, all-gathered into every forward) and 177 (a learning
    rate off by 10^3) are numerical faults of the whole job."""
    rows = {r.job: r for r in board.results if r.method == "l4lite" and r.job[:3] in ("169", "173", "177")}
    assert rows["169-fsdp-healthy"].pred_status == "healthy"
    for job in ("173-fsdp-nan", "177-fsdp-diverge"):
        assert rows[job].pred_status == "incident" and rows[job].category_ok and rows[job].phase_ok, job
        assert rows[job].node_ok, job


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("161-lightning-preempt", "trn-sjc2-r08-n4", "host", "train"),
    ("162-hf-preempt", "gpu-node-07", "host", "train"),
    ("163-accelerate-cpu_throttle", "a100-rack2-15", "host", "train"),
    ("164-deepspeed-cpu_throttle", "cpu-node-a", "host", "train"),
    ("165-deepspeed-netslow", "llm-pretrain-7f9c4-worker-1", "network", "train"),
    ("166-hf-version_mismatch", "h100-sxm-044", "user_config", "init"),
    ("167-hf-inode_full", "dgx-b200-03", "storage", "checkpoint"),
    ("168-accelerate-preempt", "compute-beta", "host", "train")])
def test_a_preempted_throttled_or_mismatched_node_is_read_on_that_node(board, job: str, node: str, category: str,
                                                                       phase: str) -> None:  # type: ignore[no-untyped-def]
    """161, 162, 168: the launcher stopped from outside before anything failed is the node taken away (host), while
    the other node's ranks only lose it (168, under `accelerate launch`, was made after the mechanism); 163, 164: the node whose ranks went quiet while every rank heard of timed
    out is the slow one (163's quiet rank printed nothing at all); 165-167: a slow link, an older package on one
    node, a disk out of inodes. The categories in ``OPEN_CATEGORY_161`` are not in the logs."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.phase_ok, (row.suspects, row.phase_ok)
    assert row.category_ok or job in OPEN_CATEGORY_161, (row.job, row.category_ok)


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("154-deepspeed-stray_barrier", "a100-rack2-14", "software", "train"),
    ("158-hf-stray_barrier", "dgx-b200-11", "software", "train"),
    ("159-accelerate-collective_mismatch", "compute-alpha", "software", "train"),
    ("085-ddp-stray_barrier", "h100-sxm-044", "software", "train"),
    ("156-lightning-host_oom", "llm-pretrain-7f9c4-worker-1", "host", "train"),
    ("155-accelerate-host_oom", "cpu-node-b", "host", "train"),
    ("157-deepspeed-tz_exception", "h100-sxm-044", "software", "train"),
    ("160-lightning-tz_exception", "node0421", "software", "train")])
def test_a_stray_collective_an_oom_kill_and_a_clock_ahead_are_read_on_their_node(board, job: str, node: str,
                                                                                category: str, phase: str) -> None:  # type: ignore[no-untyped-def]
    """154, 158, 159, 085: the rank whose collective no other rank is in (its peers timed out or lost it in the step)
    took its own code path: software, on its node; 156: the kernel's kill on a node whose ranks log nothing timed
    after start-up, dated in training by its node-mate's traceback; 157, 160: a node 9 hours ahead moves nothing."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.category_ok and row.phase_ok, (row.suspects, row.category_ok, row.phase_ok)


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("146-ddp-layer_mismatch", "cpu-node-a", "user_config", "init"),
    ("153-lightning-layer_mismatch", "gpu-node-12", "user_config", "init"),
    ("132-ddp-model_config", "compute-beta", "user_config", "init"),
    ("148-ddp-shard_truncated", "h100-sxm-044", "data", "train"),
    ("152-lightning-shard_truncated", "trn-sjc2-r08-n4", "data", "train"),
    ("149-ddp-pids_limit", "dgx-b200-11", "user_config", "train")])
def test_a_node_s_model_data_or_process_limit_is_read_on_that_node(board, job: str, node: str, category: str,
                                                                    phase: str) -> None:  # type: ignore[no-untyped-def]
    """146, 153: every rank fails DDP's parameter check, and the rank the others name is the odd one; 132: one rank's
    own "appears not to match sizes" is a configuration too; 148, 152: a generic reader error raised in the
    dataset by the ranks of one node (or one rank) alone is that part's data; 149: a fork refused with EAGAIN is the
    pids limit, in training though the last marker before it was a save's start."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.category_ok and row.phase_ok, (row.suspects, row.category_ok, row.phase_ok)


@pytest.mark.parametrize(("job", "node", "category", "phase"), [
    ("139-ddp-shm_small", "h100-sxm-044", "user_config", "train"),
    ("140-accelerate-shm_small", "dgx-b200-11", "user_config", "train"),
    ("145-hf-shm_small", "a100-rack2-15", "user_config", "train"),
    ("141-accelerate-port_taken", None, "user_config", "init"),
    ("142-ddp-no_master_host", "node0422", "network", "init")])
def test_a_node_s_setup_is_read_by_what_its_launcher_or_workers_met(board, job: str, node: str | None, category: str,
                                                                     phase: str) -> None:  # type: ignore[no-untyped-def]
    """139, 140, 145: a worker's shared-memory file (re-raised in its rank, or printed by the worker's queue feeder
    while its rank waits) is /dev/shm, on that node, in training; 141: Accelerate's own check finds the rendezvous
    port taken (the job's MASTER_PORT); 142: c10d cannot resolve the master's name on the second node."""
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    assert (truth["category"], truth["phase"], truth["faulty_nodes"]) == (category, phase, [node] if node else [])
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_ok in (True, None) and (node is None or row.node_rank == 1), (row.suspects, row.node_ok)
    assert row.category_ok and row.phase_ok, (row.category_ok, row.phase_ok)


@pytest.mark.parametrize(("job", "category"), [("133-ddp-netdrop", "network"), ("138-lightning-netdrop", "network"),
                                               ("136-ddp-compile_nocxx", "user_config")])
def test_a_dropped_link_and_a_missing_compiler_are_read_on_their_node(board, job: str, category: str) -> None:  # type: ignore[no-untyped-def]
    """133, 138: the node's gloo reads time out in TCP itself (its packets never answered), the peers only wait;
    136: one node's environment names a compiler it does not have, its ranks fail compiling the first forward."""
    assert json.loads((JOBS / job / "ground_truth.json").read_text())["category"] == category
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.node_rank == 1 and row.category_ok and row.phase_ok, (row.suspects, row.category_ok, row.phase_ok)


def test_a_restart_is_read_by_its_first_attempt_s_failure(board) -> None:  # type: ignore[no-untyped-def]
    """126: attempt_0's rank 0 is SIGKILLed while it saves; the restarted ranks of both nodes fail reading the file
    it cut short. The kill, told by its agent alone before the restart, is the root: its node, the checkpoint
    phase, a host fault, and the restarted group's exit report is no evidence of it."""
    row = next(r for r in board.results if r.method == "l4lite" and r.job == "126-ddp-save_killed")
    assert row.node_rank == 1 and row.phase_ok and row.category_ok, (row.suspects, row.phase_ok, row.category_ok)
    assert row.ev_pred == row.ev_pred_hit >= 1


@pytest.mark.parametrize(("count", "floors"), [(79, FLOORS_000_078), (89, FLOORS_000_088), (97, FLOORS_000_096),
                                               (103, FLOORS_000_102)])
def test_the_first_jobs_keep_their_floors(board, count: int, floors: dict[str, float]) -> None:  # type: ignore[no-untyped-def]
    """Each batch of jobs keeps the floors it had when the jobs after it were added."""
    first = [r for r in board.results if r.method == "l4lite" and r.job[:3].isdigit() and int(r.job[:3]) < count]
    assert len(first) == count
    summary = summarize(first)
    low = {k: round(summary[k], 3) for k, floor in floors.items() if summary[k] < floor}
    assert low == {}


# the category each job's own mechanism gives: a generic error raised in one rank's data-loading frames (094, 095,
# 110; the DataLoader's own timeout in 107, 109), a rank's missing shard (098), a dead upload thread (108), a
# traceback a rank logged inside a JSON record's exception field (104, ``ingest.jsonlog``)
@pytest.mark.parametrize(("job", "category"), [("104-ddp-json_exception", "software"),
    ("094-ddp-short_sample", "data"), ("095-accelerate-short_sample", "data"), ("110-lightning-short_sample", "data"),
    ("107-ddp-loader_stall", "data"), ("109-accelerate-loader_stall", "data"), ("098-ddp-missing_shard", "storage"),
    ("108-ddp-upload_enospc", "storage")])
def test_one_rank_s_own_part_gives_the_category(board, job: str, category: str) -> None:  # type: ignore[no-untyped-def]
    assert json.loads((JOBS / job / "ground_truth.json").read_text())["category"] == category
    row = next(r for r in board.results if r.method == "l4lite" and r.job == job)
    assert row.category_ok and row.node_rank == 1, (row.job, row.suspects)


def test_the_training_health_jobs_are_read_where_they_failed(board) -> None:  # type: ignore[no-untyped-def]
    """120-124: the fp16 loss-scale search is healthy, every step overflowing and a learning rate off by 10^3 are
    job-wide numerical faults; 124, whose agent's exit barrier fails after a clean finish, is healthy."""
    rows = {r.job: r for r in board.results if r.method == "l4lite" and r.job[:3] in ("120", "121", "122", "123", "124")}
    assert len(rows) == 5
    assert rows["120-amp-healthy"].pred_status == "healthy"
    assert rows["124-accelerate-healthy"].pred_status == "healthy"
    for job in ("121-amp-overflow", "122-amp-diverge", "123-accelerate-diverge"):
        assert rows[job].pred_status == "incident" and rows[job].category_ok and rows[job].phase_ok, job
        assert rows[job].node_ok, job  # job-wide: no node blamed


def test_a_loss_spike_the_run_recovers_from_is_a_job_wide_incident(board) -> None:  # type: ignore[no-untyped-def]
    """151: a schedule off by 10^2 for two steps; the loss jumps from 3.2 to 22 and comes back down, the run ends
    without an error: a numerical incident of the whole job, in training, no node blamed."""
    row = next(r for r in board.results if r.method == "l4lite" and r.job == "151-ddp-loss_spike")
    assert row.pred_status == "incident" and row.category_ok and row.phase_ok and row.node_ok, row.suspects


def test_no_folder_or_file_name_is_ever_a_suspect(board) -> None:  # type: ignore[no-untyped-def]
    wrong = []
    for r in board.results:
        truth = json.loads((JOBS / r.job / "ground_truth.json").read_text()) if (JOBS / r.job).exists() else {}
        hosts = set(truth.get("node_names", []))
        # "rank:N" is a rank whose node no line tells, not a name read from a path
        wrong += [f"{r.job}: {n}" for n in r.suspects if hosts and n not in hosts and not n.startswith("rank:")]
    assert wrong == []


def test_the_faulty_node_is_first_wherever_one_node_is_at_fault(board) -> None:  # type: ignore[no-untyped-def]
    # a rank SIGKILLed on one node: its agent's report beats its peers' lost connections and a launcher banner
    missed = [f"{r.job}: {r.suspects[:2]}" for r in board.results
              if r.method == "l4lite" and len(r.faulty) == 1 and r.node_rank != 1 and r.job not in OPEN_NODE_MISSES]
    assert missed == []


def test_a_fault_every_node_shares_blames_no_node(board) -> None:  # type: ignore[no-untyped-def]
    # every rank fails loading the same truncated checkpoint: job-wide, whichever node logged it first
    shared = [r for r in board.results if r.method == "l4lite" and r.truth_status == "incident" and not r.faulty]
    assert len(shared) >= 4
    assert [f"{r.job}: {r.suspects[:2]}" for r in shared if not r.node_ok] == []


@pytest.mark.parametrize("job", ["001-ddp-exception", "009-hf-exception", "017-lightning-exception",
                                 "030-deepspeed-exception"])
def test_a_silent_rank_s_traceback_is_dated_near_its_failure_not_at_its_start_up(job: str) -> None:
    # the raising rank logs nothing while it trains, so its traceback inherits its start-up banner's time; the
    # job's last step before the next line of its file, or its launcher's first-failure time, dates it
    from datetime import datetime

    analyzer = pipeline_analyzer()
    assert analyzer is not None
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    got = analyzer(JOBS / job)["failure_time"]
    seconds = datetime.fromisoformat(got.replace("Z", "+00:00")).timestamp() - \
        datetime.fromisoformat(truth["fault_time"].replace("Z", "+00:00")).timestamp()
    assert abs(seconds) < 2.0
