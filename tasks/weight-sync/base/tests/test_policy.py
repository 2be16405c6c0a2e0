"""Single-process behaviour of the policy, trainer and rollout worker."""
import torch

from wsync import PolicyNet, RolloutWorker, Trainer, is_trainer, rollout_ranks


def _batch(n=32, obs_dim=8, n_actions=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, obs_dim, generator=g)
    actions = torch.randint(0, n_actions, (n,), generator=g)
    adv = torch.randn(n, generator=g)
    return obs, actions, adv


def test_policy_logits_are_fp32_whatever_the_weight_dtype():
    torch.manual_seed(0)
    model = PolicyNet(8, 4, hidden=16, head_dtype=torch.float64)
    assert model.head.weight.dtype == torch.float64
    assert model.trunk[0].weight.dtype == torch.float32
    logits = model(torch.randn(5, 8))
    assert logits.shape == (5, 4) and logits.dtype == torch.float32


def test_trainer_step_changes_weights_and_bumps_version():
    torch.manual_seed(0)
    model = PolicyNet(8, 4, hidden=16)
    trainer = Trainer(model, lr=1e-2)
    before = [p.detach().clone() for p in model.parameters()]
    assert trainer.version == 0
    loss = trainer.step(*_batch())
    assert isinstance(loss, float)
    assert trainer.version == 1
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_training_raises_logprob_of_advantaged_actions():
    torch.manual_seed(0)
    model = PolicyNet(8, 4, hidden=16)
    trainer = Trainer(model, lr=5e-2)
    obs, actions, _ = _batch()
    adv = torch.ones(len(actions))
    start = model.log_prob(obs, actions).mean().item()
    for _ in range(20):
        trainer.step(obs, actions, adv)
    assert model.log_prob(obs, actions).mean().item() > start + 0.1


def test_rollout_worker_tags_trajectories_with_weight_version():
    torch.manual_seed(0)
    worker = RolloutWorker(PolicyNet(8, 4, hidden=16), seed=3)
    assert worker.weight_version == -1
    traj = worker.act(torch.randn(6, 8))
    assert traj.actions.shape == (6,) and traj.weight_version == -1
    assert torch.all(traj.logp <= 0)
    worker.weight_version = 7
    assert worker.act(torch.randn(2, 8), greedy=True).weight_version == 7
    assert worker.report() == {"weight_version": 7}


def test_roles():
    assert is_trainer(0) and not is_trainer(1)
    assert rollout_ranks(4) == [1, 2, 3]
    assert rollout_ranks(3, trainer_rank=2) == [0, 1]
