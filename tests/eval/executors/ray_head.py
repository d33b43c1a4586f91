"""A Ray head on loopback only, for a test to take away mid-run: prints its address, then at the first line on
stdin kills every process of the head at once (as a crashed head machine would), prints "killed", and at the next
line (or end of input) exits. Its workers' temporary folder (where they build cells) is argv[1]; Ray's own
stays the machine's default (its socket paths must stay short). Run by tests/eval/executors/test_ray_head_lost.py in a process of its own."""

from __future__ import annotations

import os
import sys
import tempfile

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"   # before ray is imported: the head binds 127.0.0.1 only

from ray.cluster_utils import Cluster  # noqa: E402


def main() -> None:
    ray_tmp = os.path.join(tempfile.gettempdir(), "ray")
    os.environ["TMPDIR"] = sys.argv[1]        # inherited by the head's processes, so by its workers
    os.makedirs(os.path.join(sys.argv[1], "ray"), exist_ok=True)   # Ray notes its address there, not in /tmp/ray
    cluster = Cluster(initialize_head=True, connect=False,
                      head_node_args={"num_cpus": 2, "node_ip_address": "127.0.0.1", "include_dashboard": False,
                                      "temp_dir": ray_tmp})
    print(cluster.address, flush=True)
    sys.stdin.readline()
    cluster.head_node.kill_all_processes(check_alive=False, allow_graceful=False)
    print("killed", flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main()
