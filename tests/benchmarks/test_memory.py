"""benchmarks.memory: which process of a workload's tree counts as which kind."""

from __future__ import annotations

import os

import pytest

from benchmarks.memory import PeakMemory, classify, classify_tree

JAVA = "/usr/lib/jvm/java-17/bin/java"
DRIVER_JVM = f"{JAVA} -cp /spark/jars/* org.apache.spark.deploy.SparkSubmit --master local[*] pyspark-shell"
EXECUTOR = f"{JAVA} -cp /spark/jars/* org.apache.spark.executor.CoarseGrainedExecutorBackend --executor-id 0"
DAEMON = "/venv/bin/python -m pyspark.daemon"


def kinds(tree: dict[int, list[int]], commands: dict[int, str]) -> dict[int, str]:
    return classify_tree(1, tree, lambda pid: commands[pid])


def test_a_local_run_has_no_executor_even_while_the_driver_jvm_forks() -> None:
    # 3 is the driver JVM between fork and exec (it shows the JVM's command line and peak), 6 the
    # JDK's spawn helper (a path with "java" in it, 1 MiB), 4 the daemon, 5 a worker it forked.
    tree = {1: [2], 2: [3, 6], 6: [4], 4: [5]}
    helper = "/usr/lib/jvm/java-17/lib/jspawnhelper 12:13:14"
    commands = {1: "/venv/bin/python bench.py", 2: DRIVER_JVM, 3: DRIVER_JVM, 6: helper, 4: DAEMON, 5: DAEMON}
    workers = {4: "python_worker", 5: "python_worker"}
    assert kinds(tree, commands) == {1: "driver_python", 2: "driver_jvm", **workers}


def test_local_cluster_executors_and_their_workers() -> None:
    # 2 driver JVM; 3 an executor started through a shell (6); 4 the executor's fork in progress;
    # 5 its Python daemon; 7 a second executor.
    tree = {1: [2], 2: [6, 7], 6: [3], 3: [4, 5]}
    commands = {
        1: "/venv/bin/python bench.py",
        2: DRIVER_JVM.replace("local[*]", "local-cluster[2,1,1024]"),
        6: "/bin/bash /spark/bin/spark-class",
        3: EXECUTOR,
        4: EXECUTOR,
        5: DAEMON,
        7: EXECUTOR,
    }
    assert kinds(tree, commands) == {
        1: "driver_python",
        2: "driver_jvm",
        3: "executor_jvm",
        5: "python_worker",
        7: "executor_jvm",
    }


def test_python_children_of_the_driver_python_are_not_workers() -> None:
    tree = {1: [2, 3]}
    commands = {1: "/venv/bin/python bench.py", 2: "/venv-pypaimon/bin/python oracle.py", 3: DRIVER_JVM}
    assert kinds(tree, commands) == {1: "driver_python", 3: "driver_jvm"}


@pytest.mark.skipif(not PeakMemory.available(), reason="needs /proc (Linux)")
def test_this_process_is_the_driver_python() -> None:
    assert classify(os.getpid())[os.getpid()] == "driver_python"
