"""Vectorised CartPole-v1 dynamics in numpy (same equations as gym's classic control env)."""
import numpy as np


class VecCartPole:
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_threshold = 12 * 2 * np.pi / 360
    x_threshold = 2.4
    max_steps = 500

    def __init__(self, num_envs, seed=0):
        self.n = num_envs
        self.rng = np.random.default_rng(seed)
        self.state = self.rng.uniform(-0.05, 0.05, size=(num_envs, 4))
        self.steps = np.zeros(num_envs, dtype=np.int64)
        self.ep_returns = np.zeros(num_envs)

    def reset_idx(self, idx):
        self.state[idx] = self.rng.uniform(-0.05, 0.05, size=(len(idx), 4))
        self.steps[idx] = 0
        self.ep_returns[idx] = 0

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(action == 1, self.force_mag, -self.force_mag)
        total_mass = self.masspole + self.masscart
        pml = self.masspole * self.length
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + pml * theta_dot ** 2 * sintheta) / total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (self.length * (4.0 / 3.0 - self.masspole * costheta ** 2 / total_mass))
        xacc = temp - pml * thetaacc * costheta / total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = np.stack([x, x_dot, theta, theta_dot], axis=1)
        self.steps += 1
        self.ep_returns += 1
        terminated = (np.abs(x) > self.x_threshold) | (np.abs(theta) > self.theta_threshold)
        truncated = self.steps >= self.max_steps
        done = terminated | truncated
        finished = self.ep_returns[done].copy()
        if done.any():
            self.reset_idx(np.nonzero(done)[0])
        return self.state.copy(), np.ones(self.n), terminated, done, finished
