import torch


class GaussianDiffusion:
    def __init__(self, timesteps=1000, beta_start=1e-4, beta_end=0.02):
        self.T = timesteps
        self.betas = torch.linspace(beta_start, beta_end, timesteps)
        self.alphas_cumprod = torch.cumprod(1.0 - self.betas, dim=0)

    def q_sample(self, x0, t, noise):
        a = self.alphas_cumprod[t].sqrt()[:, None, None, None]
        s = (1 - self.alphas_cumprod[t]).sqrt()[:, None, None, None]
        return a * x0 + s * noise

    @torch.no_grad()
    def sample(self, model, shape, steps):
        x = torch.randn(shape)
        ts = torch.linspace(self.T - 1, 0, steps).long()
        for t in ts:
            tt = torch.full((shape[0],), int(t))
            eps = model(x, tt)
            a_bar = self.alphas_cumprod[t]
            x0 = (x - (1 - a_bar).sqrt() * eps) / a_bar.sqrt()
            x = a_bar.sqrt() * x0.clamp(-1, 1)  # deterministic DDIM-ish update (eta=0)
        return x
