import torch
import torch.nn as nn
import torch.nn.functional as F


class GCNLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out)

    def forward(self, x, adj):
        return torch.sparse.mm(adj, self.lin(x))


class SAGELayer(nn.Module):
    """GraphSAGE-mean layer: concat(self, mean(neighbours))."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(2 * d_in, d_out)

    def forward(self, x, adj):
        return self.lin(torch.cat([x, torch.sparse.mm(adj, x)], dim=-1))


class GNN(nn.Module):
    def __init__(self, arch, d_in, hidden, n_classes, n_layers, dropout):
        super().__init__()
        layer_cls = {"gcn": GCNLayer, "sage": SAGELayer}[arch]
        dims = [d_in] + [hidden] * (n_layers - 1) + [n_classes]
        self.layers = nn.ModuleList(layer_cls(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    def forward(self, x, adj):
        for i, layer in enumerate(self.layers):
            x = layer(x, adj)
            if i < len(self.layers) - 1:
                x = F.dropout(F.relu(x), self.dropout, self.training)
        return x
