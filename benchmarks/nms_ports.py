"""NMS as other projects' Python ports write it, unmodified in style: scalar loops with builtin
max/min and float() (the Cython nms and Soft-NMS ported line by line), the IoU matrix's upper
triangle (YOLACT's fast NMS), np.delete of the suppressed (Malisiewicz's), a ternary on the kept
list, YOLOv5's non_max_suppression (an image's result assigned into a list of images, `continue`
where an image has no candidates). Each runs in NumPy and under strider.compile(strict=True) on the same boxes: the results
and the arguments afterwards compared, exactly (Gaussian Soft-NMS within a few ulps: its np.exp),
the first call (the disk cache off unless STRIDER_CACHE says otherwise) and the best of a few
calls timed. No timing asserts: it prints the ratios.

    python benchmarks/nms_ports.py [--boxes 300] [--reps 5]
"""
import argparse
import os
import time

import numpy as np
from heads import _nms as nms  # YOLOX's NumPy nms: a port's stand-in for torchvision.ops.nms

import strider


def nms_cython_port(dets, thresh):
    x1, y1, x2, y2, scores = dets[:, 0], dets[:, 1], dets[:, 2], dets[:, 3], dets[:, 4]
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    order = scores.argsort()[::-1]
    ndets = dets.shape[0]
    suppressed = np.zeros((ndets), dtype=np.int64)
    keep = []
    for _i in range(ndets):
        i = order[_i]
        if suppressed[i] == 1:
            continue
        keep.append(i)
        ix1, iy1, ix2, iy2 = x1[i], y1[i], x2[i], y2[i]
        iarea = areas[i]
        for _j in range(_i + 1, ndets):
            j = order[_j]
            if suppressed[j] == 1:
                continue
            xx1 = max(ix1, x1[j])
            yy1 = max(iy1, y1[j])
            xx2 = min(ix2, x2[j])
            yy2 = min(iy2, y2[j])
            w = max(0.0, xx2 - xx1 + 1)
            h = max(0.0, yy2 - yy1 + 1)
            inter = w * h
            ovr = inter / (iarea + areas[j] - inter)
            if ovr >= thresh:
                suppressed[j] = 1
    return keep


def soft_nms_cython_port(boxes, sigma=0.5, Nt=0.3, threshold=0.001, method=0):
    N = boxes.shape[0]
    for i in range(N):
        maxscore = boxes[i, 4]
        maxpos = i
        tx1, ty1, tx2, ty2, ts = boxes[i, 0], boxes[i, 1], boxes[i, 2], boxes[i, 3], boxes[i, 4]
        pos = i + 1
        while pos < N:
            if maxscore < boxes[pos, 4]:
                maxscore = boxes[pos, 4]
                maxpos = pos
            pos = pos + 1
        boxes[i, 0], boxes[i, 1], boxes[i, 2] = boxes[maxpos, 0], boxes[maxpos, 1], boxes[maxpos, 2]
        boxes[i, 3], boxes[i, 4] = boxes[maxpos, 3], boxes[maxpos, 4]
        boxes[maxpos, 0], boxes[maxpos, 1], boxes[maxpos, 2], boxes[maxpos, 3], boxes[maxpos, 4] = tx1, ty1, tx2, ty2, ts
        tx1, ty1, tx2, ty2, ts = boxes[i, 0], boxes[i, 1], boxes[i, 2], boxes[i, 3], boxes[i, 4]
        pos = i + 1
        while pos < N:
            x1, y1, x2, y2 = boxes[pos, 0], boxes[pos, 1], boxes[pos, 2], boxes[pos, 3]
            area = (x2 - x1 + 1) * (y2 - y1 + 1)
            iw = (min(tx2, x2) - max(tx1, x1) + 1)
            if iw > 0:
                ih = (min(ty2, y2) - max(ty1, y1) + 1)
                if ih > 0:
                    ua = float((tx2 - tx1 + 1) * (ty2 - ty1 + 1) + area - iw * ih)
                    ov = iw * ih / ua
                    if method == 1:
                        if ov > Nt:
                            weight = 1 - ov
                        else:
                            weight = 1
                    elif method == 2:
                        weight = np.exp(-(ov * ov) / sigma)
                    else:
                        if ov > Nt:
                            weight = 0
                        else:
                            weight = 1
                    boxes[pos, 4] = weight * boxes[pos, 4]
                    if boxes[pos, 4] < threshold:
                        boxes[pos, 0], boxes[pos, 1], boxes[pos, 2] = boxes[N - 1, 0], boxes[N - 1, 1], boxes[N - 1, 2]
                        boxes[pos, 3], boxes[pos, 4] = boxes[N - 1, 3], boxes[N - 1, 4]
                        N = N - 1
                        pos = pos - 1
            pos = pos + 1
    keep = [i for i in range(N)]
    return keep


def matrix_nms(boxes, scores, thr):
    order = np.argsort(-scores)
    boxes = boxes[order]
    x1, y1, x2, y2 = boxes.T
    area = (x2 - x1) * (y2 - y1)
    xx1 = np.maximum(x1[:, None], x1[None])
    yy1 = np.maximum(y1[:, None], y1[None])
    xx2 = np.minimum(x2[:, None], x2[None])
    yy2 = np.minimum(y2[:, None], y2[None])
    inter = np.clip(xx2 - xx1, 0, None) * np.clip(yy2 - yy1, 0, None)
    iou = np.triu(inter / (area[:, None] + area[None] - inter), k=1)
    return order[iou.max(axis=0) < thr]


def nms_malisiewicz(boxes, overlap_thresh):
    if len(boxes) == 0:
        return []
    pick = []
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    area = (x2 - x1 + 1) * (y2 - y1 + 1)
    idxs = np.argsort(y2)
    while len(idxs) > 0:
        last = len(idxs) - 1
        i = idxs[last]
        pick.append(i)
        xx1 = np.maximum(x1[i], x1[idxs[:last]])
        yy1 = np.maximum(y1[i], y1[idxs[:last]])
        xx2 = np.minimum(x2[i], x2[idxs[:last]])
        yy2 = np.minimum(y2[i], y2[idxs[:last]])
        w = np.maximum(0, xx2 - xx1 + 1)
        h = np.maximum(0, yy2 - yy1 + 1)
        overlap = (w * h) / area[idxs[:last]]
        idxs = np.delete(idxs, np.concatenate(([last], np.where(overlap > overlap_thresh)[0])))
    return boxes[pick].astype("int")


def nms_ternary(dets, thr):
    order = dets[:, 4].argsort()[::-1]
    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(i)
        xx1 = np.maximum(dets[i, 0], dets[order[1:], 0])
        yy1 = np.maximum(dets[i, 1], dets[order[1:], 1])
        xx2 = np.minimum(dets[i, 2], dets[order[1:], 2])
        yy2 = np.minimum(dets[i, 3], dets[order[1:], 3])
        inter = np.clip(xx2 - xx1, 0, None) * np.clip(yy2 - yy1, 0, None)
        a = (dets[:, 2] - dets[:, 0]) * (dets[:, 3] - dets[:, 1])
        iou = inter / (a[i] + a[order[1:]] - inter + 1e-9)
        order = order[1:][iou <= thr]
    return np.asarray(keep, dtype=np.int64) if keep else np.zeros(0, np.int64)


def xywh2xyxy(x):
    y = np.copy(x)
    y[:, 0] = x[:, 0] - x[:, 2] / 2
    y[:, 1] = x[:, 1] - x[:, 3] / 2
    y[:, 2] = x[:, 0] + x[:, 2] / 2
    y[:, 3] = x[:, 1] + x[:, 3] / 2
    return y


def yolov5_non_max_suppression(prediction, conf_thres=0.25, iou_thres=0.45, max_det=300):
    bs = prediction.shape[0]
    max_wh = 7680
    max_nms = 30000
    xc = prediction[..., 4] > conf_thres
    output = [np.zeros((0, 6), dtype=np.float32)] * bs
    for xi, x in enumerate(prediction):
        x = x[xc[xi]]
        if not x.shape[0]:
            continue
        x[:, 5:] *= x[:, 4:5]
        box = xywh2xyxy(x[:, :4])
        conf = x[:, 5:].max(1, keepdims=True)
        j = x[:, 5:].argmax(1)[:, None]
        x = np.concatenate((box, conf, j.astype(np.float32)), 1)[conf.reshape(-1) > conf_thres]
        n = x.shape[0]
        if not n:
            continue
        x = x[x[:, 4].argsort()[::-1][:max_nms]]
        c = x[:, 5:6] * max_wh
        boxes, scores = x[:, :4] + c, x[:, 4]
        i = nms(boxes, scores, iou_thres)
        i = i[:max_det]
        output[xi] = x[i]
    return output


def yolo_predictions(n, images=2, classes=4, seed=0, empty=(1,)):
    """YOLOv5's raw output (cx, cy, w, h, objectness, class scores) of `images` images, n rows
    each; the images in `empty` have no row over any confidence threshold."""
    rng = np.random.default_rng(seed)
    p = np.empty((images, n, 5 + classes), np.float32)
    p[..., 0:2] = rng.uniform(0, 640, (images, n, 2))
    p[..., 2:4] = rng.uniform(10, 100, (images, n, 2))
    p[..., 4:] = rng.uniform(0, 1, (images, n, 1 + classes))
    p[list(empty), :, 4] = 0.0
    return p


def boxes_of(n, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 200, (n, 2))
    wh = rng.uniform(5, 60, (n, 2))
    return np.concatenate([xy, xy + wh, rng.random((n, 1))], 1).astype(dtype)


def same(a, b, ulps):
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y, ulps) for x, y in zip(a, b))
    a2, b2 = np.asarray(a), np.asarray(b)
    if type(a) is not type(b) or a2.shape != b2.shape or a2.dtype != b2.dtype:
        return False
    if ulps and a2.dtype.kind == "f":
        return bool(np.all(np.abs(a2 - b2) <= ulps * np.spacing(np.maximum(np.abs(a2), np.abs(b2)))))
    return np.array_equal(a2, b2)


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def best(fn, args, reps):
    times = []
    for _ in range(reps):
        a = copies(args)
        start = time.perf_counter()
        fn(*a)
        times.append(time.perf_counter() - start)
    return min(times)


def cases(n):
    d = boxes_of(n)
    yield "Cython nms port (builtin max/min)", nms_cython_port, (d, 0.5), (), 0
    for method in (0, 1, 2):
        yield (f"Soft-NMS Cython port, method {method}", soft_nms_cython_port,
               (boxes_of(n // 3, 1, np.float64), 0.5, 0.3, 0.001, method), ("method",), 4 if method == 2 else 0)
    yield "matrix NMS (np.triu)", matrix_nms, (d[:, :4], d[:, 4], 0.5), (), 0
    yield "Malisiewicz NMS (np.delete)", nms_malisiewicz, (d[:, :4], 0.3), (), 0
    yield "NMS with a ternary return", nms_ternary, (d, 0.5), (), 0
    yield ("YOLOv5 non_max_suppression (list items)", yolov5_non_max_suppression,
           (yolo_predictions(n * 4), 0.25, 0.45, 300), (), 0)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--boxes", type=int, default=300)
    p.add_argument("--reps", type=int, default=5)
    opts = p.parse_args()
    # a first call compiles, as on a fresh machine (read at the first compile; set here, not on
    # import: the tests import the ports, and workers they start inherit the environment)
    os.environ.setdefault("STRIDER_CACHE", "0")
    print(f"{'port':42s} {'result':8s} {'first call':>11s} {'NumPy':>10s} {'strider':>10s} {'ratio':>7s}")
    for name, fn, args, statics, ulps in cases(opts.boxes):
        compiled = strider.compile(fn, static_argnames=statics, strict=True)
        expected_args, got_args = copies(args), copies(args)
        expected = fn(*expected_args)
        start = time.perf_counter()
        got = compiled(*got_args)
        first = time.perf_counter() - start
        exact = same(expected, got, ulps) and all(same(e, g, ulps) for e, g in zip(expected_args, got_args)
                                                 if isinstance(e, np.ndarray))
        t_numpy, t_strider = best(fn, args, opts.reps), best(compiled, args, opts.reps)
        print(f"{name:42s} {('exact' if not ulps else f'{ulps} ulps') if exact else 'WRONG':8s} "
              f"{first * 1e3:8.0f} ms {t_numpy * 1e3:7.2f} ms {t_strider * 1e3:7.3f} ms {t_numpy / t_strider:6.1f}x")


if __name__ == "__main__":
    main()
