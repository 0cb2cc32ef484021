"""What the image pull costs a cluster, per image in the catalog (issue 15, part 8).

No image is pulled here: the seconds come from the catalog's sizes at the time
model's pull rate (experiments/estimate/time_model.py), the dollars from clusters/prices.yaml
for the shipped EKS clusters (a node bills while it pulls).
Run: .venv/bin/python benchmarks/image_pull.py
"""

from __future__ import annotations

from experiments.estimate.prices import cluster_hourly_price, load_price_catalog
from experiments.estimate.time_model import PULL_BYTES_PER_S, image_pull
from experiments.model.cluster_spec import load_cluster_spec
from experiments.model.render import DEFAULT_IMAGE, SEED_IMAGE, images_pulled
from experiments.resources import resource_path

CLUSTERS = ("eks-6.yaml", "eks-30.yaml", "eks-256.yaml")


def main() -> None:
    catalog = load_price_catalog()
    specs = [load_cluster_spec(resource_path("clusters", name)) for name in CLUSTERS]
    print(f"pull rate {PULL_BYTES_PER_S / 1e6:.1f} MB/s per node, every node at once")
    header = "".join(f"{f'$ {s.nodes} nodes':>14}" for s in specs)
    print(f"{'image':<44} {'pull s':>8}{header}")
    for label, image in (("seed (before)", SEED_IMAGE), ("default (after)", DEFAULT_IMAGE)):
        pull = image_pull(image)
        dollars = ""
        for spec in specs:
            hourly = cluster_hourly_price(spec, catalog).usd_per_hour
            dollars += f"{hourly * pull.seconds / 3600:>14.2f}"
        print(f"{label:<44} {pull.seconds:>8.1f}{dollars}")
        for ref in images_pulled(image):
            print(f"  {ref}")
        print(f"  {pull.note}")


if __name__ == "__main__":
    main()
