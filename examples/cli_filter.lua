-- Optional Slurm cli_filter (cli_filter.lua, CliFilterPlugins=lua in slurm.conf): asks the
-- schedmate Advisor for a duration prediction at submit time and puts it in the job's Comment.
-- It runs in the user's own sbatch process on the submit host, never in slurmctld, and gives
-- up after 3 seconds: if schedmate is missing, slow or fails, the job is submitted unchanged.
-- It never changes the user's time limit (watch does that later, within policy).

local SCHEDMATE = "/opt/schedmate/.venv/bin/schedmate"
local TIMEOUT_S = 3

-- one shell word: everything inside single quotes, quotes themselves escaped
local function shell_quote(s)
  return "'" .. string.gsub(tostring(s), "'", "'\\''") .. "'"
end

local function advise(dir, gpus)
  local cmd = "timeout " .. TIMEOUT_S .. " " .. SCHEDMATE .. " --embedder none advise --json --code "
    .. shell_quote(dir)
  if gpus then
    cmd = cmd .. " --gpus " .. shell_quote(gpus)
  end
  local fh = io.popen(cmd .. " 2>/dev/null")
  if fh == nil then return nil end
  local out = fh:read("*a") or ""
  fh:close()
  local p50 = string.match(out, '"p50_s":%s*([%d%.]+)')
  local p90 = string.match(out, '"p90_s":%s*([%d%.]+)')
  if p50 == nil or p90 == nil then return nil end
  return tonumber(p50), tonumber(p90)
end

local function minutes(s)
  return string.format("%dm", math.floor(s / 60 + 0.5))
end

function slurm_cli_setup_defaults(options, early_pass)
  return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, pack_offset)
  if options["comment"] ~= nil and options["comment"] ~= "" then
    return slurm.SUCCESS  -- the user's own comment wins
  end
  local dir = options["chdir"] or os.getenv("PWD")
  if dir == nil then return slurm.SUCCESS end
  local gpus = options["gpus"]
  local ok, p50, p90 = pcall(advise, dir, gpus and string.match(gpus, "(%d+)$"))
  if ok and p50 ~= nil then
    options["comment"] = "schedmate: predicted " .. minutes(p50) .. " (p90 " .. minutes(p90) .. ")"
  end
  return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
  return slurm.SUCCESS
end
