"""``openblas_kernels``: on an AVX-512 x86-64 CPU, numpy's OpenBLAS runs its Haswell kernels in
the server's process unless the user chose; nowhere else is anything set."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

from mlxcel.openblas_kernels import NEEDS, choice, cpu_flags

AVX512 = NEEDS | {"sse2"}


def test_haswell_only_on_an_avx512_x86_64_cpu_with_nothing_chosen_before_numpy() -> None:
    assert choice({}, AVX512, numpy_loaded=False, machine="x86_64") == "Haswell"
    assert choice({}, frozenset({"avx2", "fma"}), numpy_loaded=False, machine="x86_64") is None
    assert choice({}, AVX512, numpy_loaded=False, machine="aarch64") is None
    assert choice({}, AVX512, numpy_loaded=True, machine="x86_64") is None
    assert choice({"OPENBLAS_CORETYPE": "SkylakeX"}, AVX512, numpy_loaded=False,
                  machine="x86_64") is None


def test_flags_are_read_from_cpuinfo(tmp_path: os.PathLike[str]) -> None:
    info = os.path.join(tmp_path, "cpuinfo")
    with open(info, "w", encoding="ascii") as out:
        out.write("processor\t: 0\nflags\t\t: fpu avx2 fma avx512f\n\nflags\t\t: other\n")
    assert cpu_flags(info) == frozenset({"fpu", "avx2", "fma", "avx512f"})
    assert cpu_flags(os.path.join(tmp_path, "missing")) == frozenset()


PROBE = ("import os, mlxcel; from mlxcel.engine.numpy_decode import numpy_blas_kernels; "
         "print(os.environ.get('OPENBLAS_CORETYPE'), numpy_blas_kernels())")


def _probe(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    done = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env},
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.split()


def test_the_server_s_process_runs_them_and_a_user_s_choice_wins() -> None:
    applies = NEEDS <= cpu_flags() and platform.machine() == "x86_64"
    chosen, kernels = _probe()
    if applies:
        assert (chosen, kernels) == ("Haswell", "Haswell")
    else:
        assert chosen == "None"
    chosen, _ = _probe(OPENBLAS_CORETYPE="Prescott")
    assert chosen == "Prescott"
