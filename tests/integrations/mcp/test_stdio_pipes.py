"""The gateway's stdio on the event loop (studio.integrations.stdio_pipes), in processes of their
own: lines in and out over real pipes, stray output kept off the wire while it serves and
stdout given back after, and the SDK's own transport when stdin is not a pipe."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

ECHO = r'''
import asyncio, os
from studio.integrations.stdio_pipes import claimed_stdio

async def main():
    async with claimed_stdio() as pipes:
        assert pipes is not None
        lines, out = pipes
        print("stray print")                 # fd 1 is stderr while serving
        os.write(1, b"stray write\n")
        async for line in lines:
            await out.write(line.upper())
            await out.flush()
    print("after", flush=True)               # stdout is the wire again

asyncio.run(main())
'''

NOT_A_PIPE = r'''
import asyncio
from studio.integrations.stdio_pipes import claimed_stdio

async def main():
    async with claimed_stdio() as pipes:
        print("sdk transport" if pipes is None else "pipes", flush=True)

asyncio.run(main())
'''


def test_lines_go_through_and_stray_output_misses_the_wire():
    big = "x" * 300_000   # longer than a pipe's buffer and asyncio's default line limit
    done = subprocess.run([sys.executable, "-c", ECHO], cwd=REPO, capture_output=True,
                          text=True, input=f"one\n{big}\nthree\n", timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"ONE\n{big.upper()}\nTHREE\nafter\n"
    assert "stray print" in done.stderr and "stray write" in done.stderr


def test_a_stdin_that_is_a_file_is_left_to_the_sdk(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text("{}\n")
    with source.open() as stdin:
        done = subprocess.run([sys.executable, "-c", NOT_A_PIPE], cwd=REPO, stdin=stdin,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "sdk transport\n"
