# %% [markdown]
# # privgame from Python
#
# The quickstart (`experiments/quickstart.toml`: Steinke et al.'s one-run audit of randomized response) run from
# Python, with 5 repetitions instead of 20. This file is a notebook in the percent format: open it in Jupyter
# (with jupytext), VS Code or Spyder and run it cell by cell, or run it as a plain script,
# `python docs/examples/python_api.py` (docs/api.md is the reference).

# %%
import matplotlib.pyplot as plt

import privgame

# the sections of a TOML config, as a dict (docs/config.md); a path to a .toml file works the same way
config = {
    "experiment": {"name": "quickstart-python", "seed": 2026, "repetitions": 5},
    "game": {"name": "one-run", "m": 10_000, "k_pos": 5000, "k_neg": 5000},
    "mechanism": {"name": "randomized-response", "epsilon": [0.5, 1, 2, 4, 8]},  # a list sweeps it
    "attack": {"name": "identity"},
    "analysis": {
        "confidence": 0.95,
        "delta": 0.0,
        "estimators": ["steinke"],
        "threshold": {"rule": "explicit", "at": [0.4, 0.6]},  # "member" at a released 1, "non-member" at a 0
        "two_sided": True,
    },
}

# out=None: a temporary directory that `results` owns (deleted by results.close(), at the end of a `with`
# block, or when the interpreter exits); out="runs/quickstart_python" would keep it, and resume it when run again
results = privgame.run(config)
print(results)

# %% [markdown]
# One row per grid point, as `privgame report` prints it (`brief=False`, the default, has every column, as
# `--format csv`):

# %%
summary = results.summary(brief=True)
print(summary.to_string(index=False))

# %% [markdown]
# The figure of `privgame report --plot`: the median lower bound with its min-max band against the analytic ε.
# A notebook shows the returned figure; `savefig` writes the file `--plot` would.

# %%
figure = results.plot()
figure.savefig(results.path / "lower_bounds.png")
figure  # noqa: B018  (a notebook shows a cell's last value; a script ignores it)

# %% [markdown]
# The same figure drawn into axes of your own, beside the per-trial bounds (`trials()`: the stored rows, one per
# trial).

# %%
trials = results.trials()
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4), layout="constrained")
results.plot(ax=left)
for epsilon, part in trials.groupby("mechanism.epsilon"):
    right.plot(part["repetition"], part["steinke.epsilon_lb"], marker="o", label=f"ε = {epsilon:g}")
right.set_xlabel("repetition")
right.set_ylabel("ε lower bound of the trial")
right.legend(fontsize="small")
plt.close(fig)  # in a notebook, leave this out to see it
print(trials[["trial", "mechanism.epsilon", "repetition", "steinke.epsilon_lb"]].head().to_string(index=False))

# %% [markdown]
# A finished results directory, loaded again (as `privgame report DIR` reads it: no plugin it names is imported
# unless you pass `plugins=` or `trust_plugins=True`):

# %%
again = privgame.load(results.path)
assert again.summary().equals(results.summary())
print(again, "\nholds", sorted(p.name for p in again.path.iterdir()))

# %%
results.close()  # deletes the temporary directory
print(results, "exists:", results.path.exists())
