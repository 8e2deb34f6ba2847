"""PPO (clipped objective, GAE) on vectorised CartPole. Hyper-parameters come from environment
variables (see .env); run through scripts/run.sh."""
import os
import time

import numpy as np
import torch
import torch.nn as nn

from cartpole import VecCartPole


def env(name, default, cast=float):
    return cast(os.environ.get(name, default))


TOTAL_TIMESTEPS = env("TOTAL_TIMESTEPS", 50000, int)
NUM_ENVS = env("NUM_ENVS", 8, int)
NUM_STEPS = env("NUM_STEPS", 128, int)          # rollout length per env
UPDATE_EPOCHS = env("UPDATE_EPOCHS", 4, int)
NUM_MINIBATCHES = env("NUM_MINIBATCHES", 4, int)
HIDDEN_SIZE = env("HIDDEN_SIZE", 64, int)
LEARNING_RATE = env("LEARNING_RATE", 2.5e-4)
GAMMA = env("GAMMA", 0.99)
GAE_LAMBDA = env("GAE_LAMBDA", 0.95)
CLIP_COEF = env("CLIP_COEF", 0.2)
ENT_COEF = env("ENT_COEF", 0.01)
VF_COEF = env("VF_COEF", 0.5)
SEED = env("SEED", 1, int)
RUN_NAME = os.environ.get("RUN_NAME", "ppo_cartpole")


class Agent(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.actor = nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 2))

    def value(self, x):
        return self.critic(x).squeeze(-1)

    def act(self, x, action=None):
        dist = torch.distributions.Categorical(logits=self.actor(x))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(x)


def main():
    torch.manual_seed(SEED)
    envs = VecCartPole(NUM_ENVS, SEED)
    agent = Agent(HIDDEN_SIZE)
    opt = torch.optim.Adam(agent.parameters(), lr=LEARNING_RATE, eps=1e-5)
    batch_size = NUM_ENVS * NUM_STEPS
    minibatch = batch_size // NUM_MINIBATCHES
    num_updates = TOTAL_TIMESTEPS // batch_size
    print(f"{RUN_NAME}: {num_updates} updates x {batch_size} steps (envs={NUM_ENVS}, rollout={NUM_STEPS})")

    obs_buf = torch.zeros(NUM_STEPS, NUM_ENVS, 4)
    act_buf = torch.zeros(NUM_STEPS, NUM_ENVS, dtype=torch.long)
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros(NUM_STEPS, NUM_ENVS) for _ in range(4))
    obs = torch.tensor(envs.state, dtype=torch.float32)
    done = torch.zeros(NUM_ENVS)
    recent, global_step, t0 = [], 0, time.time()
    for update in range(1, num_updates + 1):
        for g in opt.param_groups:
            g["lr"] = LEARNING_RATE * (1.0 - (update - 1.0) / num_updates)
        for step in range(NUM_STEPS):
            global_step += NUM_ENVS
            obs_buf[step], done_buf[step] = obs, done
            with torch.no_grad():
                action, logp, _, value = agent.act(obs)
            act_buf[step], logp_buf[step], val_buf[step] = action, logp, value
            next_obs, reward, terminated, d, finished = envs.step(action.numpy())
            recent.extend(finished.tolist())
            rew_buf[step] = torch.tensor(reward, dtype=torch.float32)
            obs, done = torch.tensor(next_obs, dtype=torch.float32), torch.tensor(d, dtype=torch.float32)
        with torch.no_grad():
            next_value = agent.value(obs)
            adv = torch.zeros_like(rew_buf)
            lastgaelam = 0
            for t in reversed(range(NUM_STEPS)):
                nonterm = 1.0 - (done if t == NUM_STEPS - 1 else done_buf[t + 1])
                nv = next_value if t == NUM_STEPS - 1 else val_buf[t + 1]
                delta = rew_buf[t] + GAMMA * nv * nonterm - val_buf[t]
                adv[t] = lastgaelam = delta + GAMMA * GAE_LAMBDA * nonterm * lastgaelam
            returns = adv + val_buf
        b_obs, b_act, b_logp = obs_buf.reshape(-1, 4), act_buf.reshape(-1), logp_buf.reshape(-1)
        b_adv, b_ret = adv.reshape(-1), returns.reshape(-1)
        for _ in range(UPDATE_EPOCHS):
            idx = torch.randperm(batch_size)
            for s in range(0, batch_size, minibatch):
                mb = idx[s:s + minibatch]
                _, newlogp, ent, newv = agent.act(b_obs[mb], b_act[mb])
                ratio = (newlogp - b_logp[mb]).exp()
                a = b_adv[mb]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - CLIP_COEF, 1 + CLIP_COEF)).mean()
                v_loss = 0.5 * ((newv - b_ret[mb]) ** 2).mean()
                loss = pg_loss - ENT_COEF * ent.mean() + VF_COEF * v_loss
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                opt.step()
        if update % 5 == 0 or update == num_updates:
            mean_ret = np.mean(recent[-20:]) if recent else 0.0
            print(f"update {update}/{num_updates} global_step {global_step} episodic_return {mean_ret:.1f} "
                  f"loss {loss.item():.3f} SPS {int(global_step / (time.time() - t0))}", flush=True)
    print(f"finished {global_step} steps in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
