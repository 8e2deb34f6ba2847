"""Launch commands and shell launchers: who starts what, on how many GPUs and nodes.

Understands `python [-m mod] script.py`, torchrun / torch.distributed.launch, deepspeed,
accelerate launch, srun, mpirun/mpiexec, horovodrun, and shell scripts (bash/sh/sbatch)
with `#SBATCH` directives, `KEY=value` / `export` lines, `source .env` and `${VAR:-x}`.
Scripts are read only inside the job directory; nothing is executed.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from schedmate.advisor.extract.configs import load_config, parse_env_text
from schedmate.advisor.extract.paths import inside, read_source
from schedmate.advisor.extract.shell import ShellState, assignment, expand_words, split_statements
from schedmate.core.errors import InputError

__all__ = ["Launch", "parse_launch"]

_MAX_SCRIPT_BYTES = 512_000
_MAX_DEPTH = 4
_PY = re.compile(r"^(?:.*/)?python(?:\d(?:\.\d+)?)?$")
_SHELLS = {"bash", "sh", "zsh", "sbatch", "source", "."}
# commands of a launcher script that never start the training
_NOT_TRAINING = {
    "cd",
    "echo",
    "printf",
    "mkdir",
    "module",
    "conda",
    "export",
    "set",
    "unset",
    "source",
    ".",
    "nvidia-smi",
    "pip",
    "pip3",
    "wandb",
    "ulimit",
    "trap",
    "wait",
    "sleep",
    "date",
    "hostname",
    "exit",
    "if",
    "fi",
    "then",
    "else",
    "elif",
    "for",
    "do",
    "done",
    "while",
    "case",
    "esac",
    "rm",
    "cp",
    "mv",
    "ls",
    "cat",
    "tee",
    "ln",
    "touch",
    "chmod",
    "git",
    "wget",
    "curl",
    "tar",
    "unzip",
    "gzip",
    "scontrol",
    "squeue",
    "srun_wrapper",
    "huggingface-cli",
    "hf",
    "apt-get",
    "apt",
    "sed",
    "awk",
    "grep",
    "head",
    "tail",
    "find",
    "xargs",
    "test",
    "[",
    "[[",
    "true",
    "false",
    "shift",
    "local",
    "declare",
    "readonly",
    "return",
    "function",
    "eval",
    "exec_wrapper",
    "which",
    "pwd",
    "rsync",
    "scp",
    "ssh",
    "kill",
    "pkill",
    "free",
    "df",
    "du",
    "uname",
    "id",
    "whoami",
    "basename",
    "dirname",
}
# launcher flags that take no value (everything else of the form `--flag value` consumes one)
_BOOL_FLAGS = {
    "--standalone",
    "--multi_gpu",
    "--use_env",
    "--use-env",
    "-u",
    "-B",
    "-O",
    "--no_python",
    "--no-python",
    "--exclusive",
    "--deepspeed_multinode_launcher",
    "--no_local_rank",
    "--no-local-rank",
    "--mpi",
    "--tpu",
    "--cpu",
    "-l",
    "--overlap",
    "--allow-run-as-root",
    "--oversubscribe",
    "--bind-to-none",
    "--module",
    "-m",
    "--run_as_module",
    "--fsdp",
    "--use_fsdp",
    "--use_deepspeed",
    "--dynamo_backend",
    "--gpu",
}


@dataclass
class Launch:
    """What the launch command says: the script, its arguments and the resources asked for."""

    launcher: str | None = None
    entrypoint: str | None = None  # relative to the job dir
    module: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    procs_per_node: int | None = None
    n_nodes: int | None = None
    total_procs: int | None = None
    gpu_model: str | None = None
    precision: str | None = None
    parallelism: set[str] = field(default_factory=set)
    job_name: str | None = None
    config_paths: list[str] = field(default_factory=list)
    tool: str | None = None  # a training CLI (yolo, fairseq-train, tune, ...) that ran instead of a script
    sources: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def n_gpus(self) -> int | None:
        if self.total_procs:
            return self.total_procs
        if self.procs_per_node:
            return self.procs_per_node * (self.n_nodes or 1)
        return None


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    m = re.match(r"^\s*(\d+)", str(text))
    return int(m.group(1)) if m else None


def _tokens(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=True)
    except ValueError:
        return segment.split()


_GRES = re.compile(r"gpu(?::([A-Za-z][\w.-]*))?:(\d+)")  # --gres=gpu[:model]:N
_GPUS = re.compile(r"(?:([A-Za-z][\w.-]*):)?(\d+)")  # --gpus[-per-node]=[model:]N
_GPU_MODEL = re.compile(r"a100|h100|v100|a10|l4|t4|h200|b200|mi\d+", re.I)


def _gpu_spec(pattern: re.Pattern[str], val: str, launch: Launch) -> int | None:
    """The GPU count of a Slurm GPU request; its model, when named, is recorded on `launch`."""
    gm = pattern.search(val)
    if gm is None:
        return None
    if gm.group(1):
        launch.gpu_model = gm.group(1).lower()
    return int(gm.group(2))


def _parse_sbatch(text: str, launch: Launch, where: str) -> None:
    for raw in text.splitlines():
        m = re.match(r"\s*#SBATCH\s+(.*)", raw)
        if not m:
            continue
        for tok in _tokens(m.group(1)):
            key, _, val = tok.partition("=")
            if key.startswith("--gres"):
                count = _gpu_spec(_GRES, val, launch)
                if count is not None:
                    launch.procs_per_node = count
                    launch.sources.setdefault("n_gpus", f"{where} #SBATCH --gres")
            elif key in ("--gpus-per-node", "--gpus_per_node"):
                count = _gpu_spec(_GPUS, val, launch)
                if count is not None:
                    launch.procs_per_node = count
            elif key in ("--gpus", "-G"):
                count = _gpu_spec(_GPUS, val, launch)
                if count is not None:
                    launch.total_procs = count
            elif key in ("--nodes", "-N"):
                launch.n_nodes = _int(val.split("-")[-1]) or launch.n_nodes
                launch.sources.setdefault("n_nodes", f"{where} #SBATCH --nodes")
            elif key in ("--constraint", "-C") and (cm := _GPU_MODEL.search(val)):
                launch.gpu_model = cm.group(0).lower()
            elif key in ("--job-name", "-J"):
                launch.job_name = val
            elif key == "--ntasks-per-node" and launch.procs_per_node is None:
                launch.procs_per_node = _int(val)


def _take_options(tokens: list[str], i: int, values: dict[str, str]) -> int:
    """Skip a launcher's own options starting at i, recording `--flag value` pairs; return the next index."""
    while i < len(tokens) and tokens[i].startswith("-"):
        tok = tokens[i]
        if "=" in tok:
            k, v = tok.split("=", 1)
            values[k] = v
            i += 1
        elif tok in _BOOL_FLAGS or i + 1 >= len(tokens) or tokens[i + 1].startswith("-"):
            values[tok] = "true"
            i += 1
        else:
            values[tok] = tokens[i + 1]
            i += 2
    return i


def _first(values: dict[str, str], *names: str) -> str | None:
    for n in names:
        if n in values:
            return values[n]
    return None


class _Parser:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.launch = Launch()
        self.seen_scripts: set[Path] = set()
        self.tool: tuple[str, list[str], dict[str, str], str] | None = None  # the longest non-Python command

    def segment(self, tokens: list[str], env: dict[str, str], depth: int, where: str) -> bool:
        """Interpret one simple command; True once a Python entrypoint was found."""
        L = self.launch
        # env prefixes: A=1 B=2 cmd ...
        while tokens and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):
            k, v = tokens.pop(0).split("=", 1)
            env[k] = v
        while tokens and Path(tokens[0]).name in (
            "exec",
            "time",
            "nohup",
            "command",
            "builtin",
            "env",
            "nice",
        ):
            tokens = tokens[1:]  # wrappers that run the rest of the line
            while tokens and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]) or tokens[0].startswith("-")):
                tok = tokens.pop(0)
                if "=" in tok and not tok.startswith("-"):
                    k, v = tok.split("=", 1)
                    env[k] = v
        if not tokens:
            return False
        prog = Path(tokens[0]).name
        rest = tokens[1:]
        if prog in _NOT_TRAINING:
            if prog in ("source", ".") and rest:
                p = inside(self.root, rest[0])
                if p is not None:
                    try:
                        env.update(parse_env_text(read_source(p, _MAX_SCRIPT_BYTES, what="sourced file")))
                    except InputError as exc:
                        self.launch.notes.append(str(exc))
            return False
        if prog in ("sbatch", "bash", "sh", "zsh") or prog.endswith(".sh"):
            script_tokens = rest if not prog.endswith(".sh") else tokens
            opts: dict[str, str] = {}
            j = _take_options(script_tokens, 0, opts) if prog == "sbatch" else 0
            if prog in ("bash", "sh", "zsh"):
                while j < len(script_tokens) and script_tokens[j].startswith("-"):
                    j += 1
            if prog == "sbatch":
                _parse_sbatch("\n".join(f"#SBATCH {k}={v}" for k, v in opts.items()), L, "sbatch")
                L.launcher = L.launcher or "sbatch"
            if j < len(script_tokens):
                return self.script(script_tokens[j], script_tokens[j + 1 :], env, depth + 1)
            return False
        if prog == "srun":
            opts = {}
            j = _take_options(rest, 0, opts)
            nodes = _int(_first(opts, "-N", "--nodes"))
            if nodes:
                L.n_nodes = nodes
            ntasks = _int(_first(opts, "-n", "--ntasks"))
            per_node = _int(_first(opts, "--ntasks-per-node", "--gpus-per-node"))
            if per_node:
                L.procs_per_node = per_node
            if ntasks:
                L.total_procs = ntasks
            L.launcher = "srun"
            return self.segment(rest[j:], env, depth, where)
        if prog in ("mpirun", "mpiexec", "horovodrun"):
            opts = {}
            j = _take_options(rest, 0, opts)
            np_ = _int(_first(opts, "-np", "-n", "--np"))
            if np_:
                L.total_procs = np_
            L.launcher = prog if prog != "mpiexec" else "mpirun"
            if prog == "horovodrun":
                L.parallelism.add("horovod")
            return self.segment(rest[j:], env, depth, where)
        if prog in ("torchrun",) or (
            _PY.match(prog)
            and rest[:2] in (["-m", "torch.distributed.run"], ["-m", "torch.distributed.launch"])
        ):
            if _PY.match(prog):
                rest = rest[2:]
            opts = {}
            j = _take_options(rest, 0, opts)
            nproc = _first(opts, "--nproc_per_node", "--nproc-per-node")
            L.procs_per_node = _int(nproc) or L.procs_per_node
            nn = _first(opts, "--nnodes")
            if nn:
                L.n_nodes = _int(nn.split(":")[-1]) or L.n_nodes
            L.launcher = "torchrun"
            L.parallelism.add("ddp")
            L.sources.setdefault("n_gpus", f"{where} torchrun --nproc_per_node")
            return self.python_target(rest[j:], env, depth, where)
        if prog == "deepspeed":
            opts = {}
            j = _take_options(rest, 0, opts)
            L.procs_per_node = _int(_first(opts, "--num_gpus", "--num-gpus")) or L.procs_per_node
            L.n_nodes = _int(_first(opts, "--num_nodes", "--num-nodes")) or L.n_nodes
            L.launcher = "deepspeed"
            L.parallelism.add("deepspeed")
            return self.python_target(rest[j:], env, depth, where)
        if prog == "accelerate" and rest[:1] == ["launch"]:
            opts = {}
            j = _take_options(rest, 1, opts)
            L.total_procs = _int(_first(opts, "--num_processes", "--num-processes")) or L.total_procs
            L.n_nodes = _int(_first(opts, "--num_machines", "--num-machines")) or L.n_nodes
            mp = _first(opts, "--mixed_precision", "--mixed-precision")
            if mp and mp not in ("no", "false"):
                L.precision = mp
            if "--multi_gpu" in opts or "--multi-gpu" in opts:
                L.parallelism.add("ddp")
            if "--use_fsdp" in opts or "--fsdp" in opts:
                L.parallelism.add("fsdp")
            if "--use_deepspeed" in opts:
                L.parallelism.add("deepspeed")
            cfg = _first(opts, "--config_file", "--config-file")
            if cfg:
                L.config_paths.append(cfg)
                self.accelerate_config(cfg)
            L.launcher = "accelerate"
            return self.python_target(rest[j:], env, depth, where)
        if _PY.match(prog):
            L.launcher = L.launcher or "python"
            return self.python_target(rest, env, depth, where)
        if prog.endswith(".py"):
            L.launcher = L.launcher or "python"
            return self.python_target(tokens, env, depth, where)
        if (
            re.fullmatch(r"[A-Za-z][\w.+-]*", prog)
            and rest
            and (self.tool is None or len(rest) > len(self.tool[1]))
        ):
            self.tool = (prog, list(rest), dict(env), where)
        return False

    def accelerate_config(self, rel: str) -> None:
        """`accelerate launch --config_file x.yaml`: processes, machines, precision and strategy it sets."""
        path = inside(self.root, rel)
        if path is None:
            return
        flat, err = load_config(path)
        if err:
            self.launch.notes.append(f"{rel}: {err}")
            return
        L = self.launch
        procs, machines = _int(str(flat.get("num_processes", ""))), _int(str(flat.get("num_machines", "")))
        if procs:
            L.total_procs = L.total_procs or procs
            L.sources.setdefault("n_gpus", f"{rel}: num_processes")
        if machines:
            L.n_nodes = L.n_nodes or machines
        mp = str(flat.get("mixed_precision", "no")).lower()
        if mp not in ("no", "none", "false", "") and L.precision is None:
            L.precision = mp
        kind = str(flat.get("distributed_type", "")).upper()
        for key, par in (("MULTI_GPU", "ddp"), ("FSDP", "fsdp"), ("DEEPSPEED", "deepspeed")):
            if kind == key:
                L.parallelism.add(par)

    def python_target(self, tokens: list[str], env: dict[str, str], depth: int, where: str) -> bool:
        L = self.launch
        i = 0
        while i < len(tokens) and tokens[i].startswith("-") and tokens[i] != "-m":
            i += 1
        if i >= len(tokens):
            return False
        if tokens[i] == "-m":
            if i + 1 >= len(tokens):
                return False
            L.module = tokens[i + 1]
            rel = L.module.replace(".", "/")
            for cand in (f"{rel}.py", f"{rel}/__main__.py"):
                if inside(self.root, cand) is not None:
                    L.entrypoint = cand
                    break
            L.args = tokens[i + 2 :]
        else:
            L.entrypoint = tokens[i]
            L.args = tokens[i + 1 :]
        L.env.update(env)
        L.sources.setdefault("entrypoint", where)
        return True

    def script(self, rel: str, positional: list[str], env: dict[str, str], depth: int) -> bool:
        if depth > _MAX_DEPTH:
            return False
        path = inside(self.root, rel)
        if path is None or path in self.seen_scripts:
            self.launch.notes.append(f"launcher script {rel!r} not found inside the job directory")
            return False
        self.seen_scripts.add(path)
        try:
            text = read_source(path, _MAX_SCRIPT_BYTES, what="launcher script")
        except InputError as exc:
            self.launch.notes.append(f"{exc}; not read")
            return False
        where = str(path.relative_to(self.root.resolve()))
        _parse_sbatch(text, self.launch, where)
        if "#SBATCH" in text:
            self.launch.launcher = self.launch.launcher or "sbatch"
        st = ShellState(env=dict(env), positional=list(positional), script_dir=str(Path(rel).parent))
        found = False
        for seg in split_statements(text):
            seg = re.sub(r"^(?:then|else|do|elif)\s+", "", seg)
            if assignment(seg, st):
                continue
            toks = expand_words(seg, st)
            if toks and not found and self.segment(toks, st.env, depth, where):
                found = True
        return found


def parse_launch(command: str | None, root: Path, *, default_entry: str | None = None) -> Launch:
    """Parse a launch command (possibly a shell launcher inside `root`) into a Launch."""
    parser = _Parser(root)
    if command:
        st = ShellState()
        for seg in split_statements(command):
            if assignment(seg, st):
                continue
            if parser.segment(expand_words(seg, st), st.env, 0, "command"):
                break
    L = parser.launch
    if L.entrypoint is None and L.module is None and parser.tool is not None:
        # a training CLI (`yolo train k=v`, `fairseq-train ...`, `llamafactory-cli train x.yaml`): its arguments
        # are the run's settings even though its code is not in the job directory
        prog, args, env, where = parser.tool
        L.launcher = L.launcher if L.launcher not in (None, "python") else prog
        L.tool = prog
        L.args = args
        L.env.update(env)
        L.sources.setdefault("launcher", where)
        default_entry = None
    if L.entrypoint is None and default_entry:
        L.entrypoint = default_entry
        L.sources.setdefault("entrypoint", "guessed from the job directory")
    if L.entrypoint is not None and inside(root, L.entrypoint) is None:
        L.notes.append(f"entrypoint {L.entrypoint!r} not found inside the job directory")
    return L
