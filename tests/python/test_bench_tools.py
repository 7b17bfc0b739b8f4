"""bench/interleave.py, the tool behind the GPU comparisons in bench/RESULTS.md: it reads
rates from both benchmark programs' output, compares commands within a round, and a
command that hangs is killed with everything it started."""
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import interleave  # noqa: E402


def test_rates_are_read_from_gpu_bench_and_stoker_bench_output():
    gpu_bench = ("bare: 4 threads classified 30000 images/s meanwhile\n"
                 "RESULT bare_nvjpeg_hw_pinned batch 256: 80000 images in 2.5 s = 32000 img/s (0 failed)\n")
    assert interleave.rate_of(gpu_bench) == 32000.0
    stoker_bench = ("pipeline basic on gpu: 120000 images in 4.1 s\n"
                    "  29244.3 images/s, 8.75 ms/batch of 256, 15 threads, 0 skipped\n")
    assert interleave.rate_of(stoker_bench) == pytest.approx(29244.3)
    assert interleave.rate_of("no figures here\n") is None


def test_summary_compares_within_rounds():
    script = os.path.join(ROOT, "bench", "interleave.py")
    # b is always 80% of a; c fails to print a rate
    out = subprocess.run([sys.executable, script, "--rounds", "3",
                          "a=echo 'RESULT x = 1000 img/s'", "b=echo '  800.0 images/s'", "c=exit 3"],
                         capture_output=True, text=True, check=True).stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines()[-3:]}
    assert rows["a"][1:] == ["1000", "1000", "1000", "1.000", "1.000", "1.000", "1.000"]
    assert rows["b"][4] == "0.800" and rows["b"][7] == "0.800"
    assert rows["c"][1:] == ["no", "rates"]
    assert "no rate; exit 3" in out


def test_show_prints_the_matches_beside_each_round():
    script = os.path.join(ROOT, "bench", "interleave.py")
    out = subprocess.run([sys.executable, script, "--rounds", "2", "--show", r"[0-9.]+ ms per call|decode_hw_call +[0-9.]+",
                          "a=echo 'RESULT x = 1000 img/s (0 failed batches; 7.93 ms per call, 1 thread)'",
                          "b=printf '  800.0 images/s\n  decode_hw_call        8.512\n'"],
                         capture_output=True, text=True, check=True).stdout
    rounds = [line for line in out.splitlines() if line.startswith("round")]
    assert len(rounds) == 4
    assert all(line.endswith("[7.93 ms per call]") for line in rounds if " a " in line)
    assert all(line.endswith("[decode_hw_call 8.512]") for line in rounds if " b " in line)
    assert interleave.shown(r"\d+ ms", "took 12 ms\nthen 3 ms") == ["12 ms", "3 ms"]


def test_a_hanging_command_is_killed_with_its_children():
    t0 = time.monotonic()
    out, err, code = interleave.run("sleep 60 & sleep 60; echo never", timeout=1)
    assert code == "timeout" and "killed after 1 s" in err and "never" not in out
    assert time.monotonic() - t0 < 10


def test_json_rates_and_the_performance_table(tmp_path):
    """bench/performance.sh's path: JSON rates, --json, then bench/perf_table.py's Markdown
    (a ratio column for every row, a paired column for stoker's rows only)."""
    assert interleave.rate_of('{"images_per_s": 1234.5, "images": 10}\n') == pytest.approx(1234.5)
    script = os.path.join(ROOT, "bench", "interleave.py")
    rates = tmp_path / "rates.json"
    subprocess.run([sys.executable, script, "--rounds", "2", "--json", str(rates),
                    "bare=echo '  1000 images/s'", "stoker basic=echo '{\"images_per_s\": 900}'",
                    "other basic=echo '  300 images/s'", "broken=exit 1"],
                   capture_output=True, text=True, check=True)
    table = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "perf_table.py"), str(rates),
                            "--col", "vs bare=bare", "--pair", "vs other=other {}"],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert table[0] == "| what | images/s: median (range) | vs bare | vs other | command |"
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in table[2:]}
    assert rows["stoker basic"][:3] == ["900 (900–900)", "0.90 (0.90–0.90)", "3.00 (3.00–3.00)"]
    assert rows["other basic"][1:3] == ["0.30 (0.30–0.30)", "-"]
    assert rows["broken"][0] == "failed"


def test_rate_is_the_runs_not_the_last_epochs():
    """stoker bench --json lists every epoch's rate after the run's own: the run's counts
    (a regex taking the last match once read the last, slowest epoch as the CLI's rate)."""
    line = ('{"images_per_s": 32160.70, "images": 40000, "epochs": [{"images": 2000, '
            '"seconds": 0.23, "images_per_s": 8685.50}, {"images": 2000, "seconds": 0.12, '
            '"images_per_s": 16008.50}]}\n')
    assert interleave.rate_of("progress...\n" + line) == pytest.approx(32160.7)
