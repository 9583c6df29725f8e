"""Scale-out on dask.distributed: grid search through joblib's dask backend, and
raster prediction of dask arrays on a cluster.

Each test starts from a small ``LocalCluster``; a real deployment only swaps
the cluster for ``Client("tcp://scheduler:8786")`` (see docs/raster.md).
"""

import joblib
import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, ParameterGrid

import sknd
from sknd import NDClassifier, raster

# dask.distributed and xarray (the distributed and raster extras) are optional.
dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
xr = pytest.importorskip("xarray")
distributed = pytest.importorskip("distributed")
Client, LocalCluster = distributed.Client, distributed.LocalCluster
get_task_stream = distributed.get_task_stream

FAST = {"max_epochs": 3, "random_state": 0}


# What this module's tests draw from conftest's band_data, after the sample and band counts.
DATA = {"low": 0.01, "high": 0.6, "pair": (-1, -2), "cuts": (0.1,)}


def _scene(shape=(40, 50), n_bands=4, seed=1):
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.01, 0.6, size=(n_bands,) + shape).astype(np.float32)
    values[:, 0, :3] = np.nan  # a strip of no-data
    return xr.DataArray(
        values,
        dims=("band", "y", "x"),
        coords={"y": np.arange(shape[0]) * -10.0, "x": np.arange(shape[1]) * 10.0},
    )


def _local_client(n_workers, processes=False):
    # Workers as threads of this process start in well under a second; the slow
    # process-based test covers the pickling a real cluster needs.
    cluster = LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=processes, dashboard_address=":0"
    )
    return cluster, Client(cluster)


@pytest.fixture(scope="module")
def client():
    cluster, client = _local_client(n_workers=2)
    with cluster, client:
        yield client


@pytest.fixture(scope="module")
def clf(band_data):
    return NDClassifier(**FAST).fit(*band_data(120, 4, **DATA))


GRID = {"depth": [2, 3], "lr": [0.01, 0.05]}


def _grid_search_on_cluster(band_data, client):
    X, y = band_data(120, 4, **DATA)
    with get_task_stream(client) as stream, joblib.parallel_backend("dask"):
        # n_jobs=None means "the active joblib backend": the cluster's worker threads.
        search = GridSearchCV(NDClassifier(**FAST), GRID, cv=2).fit(X, y)
    assert len(stream.data) > 0  # the fits ran as cluster tasks (joblib batches them)
    return search


@pytest.mark.slow
def test_grid_search_on_dask_backend(client, band_data):
    X, y = band_data(120, 4, **DATA)
    search = _grid_search_on_cluster(band_data, client)
    scores = search.cv_results_["mean_test_score"]
    assert scores.shape == (4,) and np.all((0 <= scores) & (scores <= 1))
    assert search.best_params_ in list(ParameterGrid(GRID))
    assert search.best_estimator_.n_features_in_ == X.shape[1]
    assert search.predict(X).shape == y.shape
    # Fits are seeded: the cluster's worker threads reproduce a serial search exactly.
    serial = GridSearchCV(NDClassifier(**FAST), GRID, cv=2).fit(X, y)
    np.testing.assert_array_equal(scores, serial.cv_results_["mean_test_score"])


def test_raster_prediction_on_cluster(client, clf):
    scene = _scene()
    lazy = scene.chunk({"y": 16, "x": 20})
    proba = raster.predict_proba(clf, lazy)
    labels = raster.predict(clf, lazy, fill_value=-1)
    assert dask.is_dask_collection(proba) and dask.is_dask_collection(labels)
    with get_task_stream(client) as stream:
        proba_values, label_values = dask.compute(proba, labels)  # the client's scheduler
    assert len(stream.data) > 0
    expected = raster.predict_proba(clf, scene)
    xr.testing.assert_allclose(proba_values, expected)
    xr.testing.assert_equal(label_values, raster.predict(clf, scene, fill_value=-1))
    assert (label_values[0, :3] == -1).all()


def test_raster_bare_dask_array_persisted_on_cluster(client, clf):
    scene = _scene().transpose("y", "x", "band").values
    lazy = client.persist(da.from_array(scene, chunks=(10, 25, 4)))
    labels = raster.predict(clf, lazy, fill_value=-1)
    assert isinstance(labels, da.Array)
    np.testing.assert_array_equal(
        client.compute(labels).result(), raster.predict(clf, scene, fill_value=-1)
    )


def test_lazy_prediction_survives_pickling(clf):
    # What a cluster of worker processes needs: the graph, estimator fast path
    # included, pickles and computes elsewhere. (Checked without spawning processes;
    # the slow test below does it for real.)
    import cloudpickle

    scene = _scene((30, 30))
    lazy = raster.predict_proba(clf, scene.chunk({"y": 10}))
    clone = cloudpickle.loads(cloudpickle.dumps(lazy))
    xr.testing.assert_allclose(
        clone.compute(scheduler="synchronous"), raster.predict_proba(clf, scene)
    )


@pytest.mark.slow
def test_worker_processes(clf, band_data):
    # As on a real cluster: estimators and the raster fast path travel by pickling.
    # Slow: each worker process imports torch.
    scene = _scene((30, 30))
    cluster, client = _local_client(n_workers=2, processes=True)
    with cluster, client:
        proba = raster.predict_proba(clf, scene.chunk({"y": 10})).compute()
        search = _grid_search_on_cluster(band_data, client)
    xr.testing.assert_allclose(proba, raster.predict_proba(clf, scene))
    # Fits are seeded: the cluster reproduces a serial search exactly.
    X, y = band_data(120, 4, **DATA)
    serial = GridSearchCV(NDClassifier(**FAST), GRID, cv=2).fit(X, y)
    np.testing.assert_array_equal(
        search.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"]
    )
    assert search.best_params_ == serial.best_params_


@pytest.mark.slow
def test_model_file_scene_on_worker_processes(clf, tmp_path):
    # The model file is what the workers get: a SavedModel pickles as the file's bytes and
    # its evaluator as numpy arrays, so worker processes predict without importing torch
    # or scikit-learn (nor does the graph carry anything of them).
    import sys

    import cloudpickle

    clf.save_model(tmp_path / "model.sknd")
    model = sknd.load_model(tmp_path / "model.sknd")
    scene = _scene((60, 40))
    lazy = raster.predict_proba(model, scene.chunk({"y": 15}))
    labels = raster.predict(model, scene.chunk({"y": 15}), fill_value=-1)
    graph = cloudpickle.dumps((lazy, labels))
    assert b"torch" not in graph and b"sklearn" not in graph

    def heavy_modules():
        return sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "sklearn", "skorch"))

    cluster, client = _local_client(n_workers=2, processes=True)
    with cluster, client:
        with get_task_stream(client) as stream:
            proba_values, label_values = dask.compute(lazy, labels)
        workers = {task["worker"] for task in stream.data}
        loaded = client.run(heavy_modules)
    assert len(workers) == 2  # both worker processes took blocks
    assert all(modules == [] for modules in loaded.values()), loaded
    xr.testing.assert_identical(proba_values, raster.predict_proba(clf, scene))
    xr.testing.assert_identical(label_values, raster.predict(clf, scene, fill_value=-1))
