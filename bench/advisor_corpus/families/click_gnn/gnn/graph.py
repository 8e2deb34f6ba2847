"""Synthetic stochastic-block-model graphs for node classification."""
import torch


def sbm_graph(num_nodes: int, num_classes: int, num_features: int, avg_degree: float, p_in_ratio: float = 8.0, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, num_classes, (num_nodes,), generator=g)
    # sample edges: pick random pairs, keep intra-class pairs more often
    n_candidates = int(num_nodes * avg_degree * 2)
    src = torch.randint(0, num_nodes, (n_candidates,), generator=g)
    dst = torch.randint(0, num_nodes, (n_candidates,), generator=g)
    same = y[src] == y[dst]
    keep_p = torch.where(same, torch.full_like(src, 1, dtype=torch.float), torch.full_like(src, 1.0 / p_in_ratio, dtype=torch.float))
    keep = torch.rand(n_candidates, generator=g) < keep_p
    src, dst = src[keep], dst[keep]
    edge_index = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], dim=1)
    centers = torch.randn(num_classes, num_features, generator=g)
    x = centers[y] * 0.3 + torch.randn(num_nodes, num_features, generator=g)
    return x, edge_index, y


def normalized_adjacency(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """D^-1/2 (A + I) D^-1/2 as a sparse COO tensor."""
    loops = torch.arange(num_nodes)
    ei = torch.cat([edge_index, torch.stack([loops, loops])], dim=1)
    vals = torch.ones(ei.shape[1])
    deg = torch.zeros(num_nodes).scatter_add_(0, ei[0], vals)
    dinv = deg.pow(-0.5)
    vals = dinv[ei[0]] * vals * dinv[ei[1]]
    return torch.sparse_coo_tensor(ei, vals, (num_nodes, num_nodes)).coalesce()
