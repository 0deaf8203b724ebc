"""Tensor parallel across processes: torchrun --nproc-per-node 2 (gloo), N/2 heads per rank,
all-reduce, equal to the whole layer in one process (tp_decode.py)."""
import os
import subprocess
import sys


def test_tensor_parallel_decode_matches_single_process():
    script = os.path.join(os.path.dirname(__file__), "tp_decode.py")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                           "--standalone", script], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "TP OK" in done.stdout, done.stdout + done.stderr
