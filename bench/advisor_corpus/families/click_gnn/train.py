#!/usr/bin/env python
"""Full-batch node classification with a GCN / GraphSAGE written in plain PyTorch."""
import time

import click
import torch
import torch.nn.functional as F

from gnn.graph import normalized_adjacency, sbm_graph
from gnn.models import GNN


@click.command()
@click.option("--arch", type=click.Choice(["gcn", "sage"]), default="gcn", show_default=True)
@click.option("--num-nodes", default=20000, show_default=True, help="nodes in the synthetic graph")
@click.option("--avg-degree", default=10.0, show_default=True)
@click.option("--num-features", default=128, show_default=True)
@click.option("--num-classes", default=8, show_default=True)
@click.option("--hidden", default=128, show_default=True)
@click.option("--layers", "n_layers", default=2, show_default=True)
@click.option("--dropout", default=0.5, show_default=True)
@click.option("--epochs", default=200, show_default=True)
@click.option("--lr", default=0.01, show_default=True)
@click.option("--weight-decay", default=5e-4, show_default=True)
@click.option("--eval-every", default=20, show_default=True)
@click.option("--seed", default=0, show_default=True)
def main(arch, num_nodes, avg_degree, num_features, num_classes, hidden, n_layers, dropout, epochs, lr, weight_decay, eval_every, seed):
    torch.manual_seed(seed)
    x, edge_index, y = sbm_graph(num_nodes, num_classes, num_features, avg_degree, seed=seed)
    adj = normalized_adjacency(edge_index, num_nodes)
    perm = torch.randperm(num_nodes)
    train_idx, val_idx, test_idx = perm[: num_nodes // 2], perm[num_nodes // 2: 3 * num_nodes // 4], perm[3 * num_nodes // 4:]
    click.echo(f"graph: {num_nodes} nodes, {edge_index.shape[1]} edges, {num_features} features, {num_classes} classes")

    model = GNN(arch, num_features, hidden, num_classes, n_layers, dropout)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best_val, t0 = 0.0, time.time()
    for epoch in range(1, epochs + 1):
        model.train()
        opt.zero_grad()
        out = model(x, adj)
        loss = F.cross_entropy(out[train_idx], y[train_idx])
        loss.backward()
        opt.step()
        if epoch % eval_every == 0 or epoch == epochs:
            model.eval()
            with torch.no_grad():
                pred = model(x, adj).argmax(1)
            val_acc = (pred[val_idx] == y[val_idx]).float().mean().item()
            test_acc = (pred[test_idx] == y[test_idx]).float().mean().item()
            best_val = max(best_val, val_acc)
            click.echo(f"Epoch {epoch:04d} | loss {loss.item():.4f} | val {val_acc:.4f} | test {test_acc:.4f} | {time.time() - t0:.1f}s")
    click.echo(f"best val acc {best_val:.4f}")


if __name__ == "__main__":
    main()
