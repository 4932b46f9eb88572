"""The lab report's words: title, the five section headings and their prose, the
figures' captions and alt text (``alt``: what each figure shows, from its
numbers), the text of its figures (``"figures"``: titles, axis labels,
legends, notes), and the run line (who wrote the report, when, with which
command), in Korean (the default), English, Japanese and Chinese.

Standard library only. Templates are ``str.format`` strings whose fields are
already-formatted values from the report renderer; a sentence that depends on
a measured yes/no comes in a ``(when true, when false)`` pair. Every language
has the same keys and the same fields, checked by the tests.
"""

from __future__ import annotations

from ..errors import ChoiceError

__all__ = ["LANGUAGES", "DEFAULT_LANGUAGE", "WORDS", "PROJECTOR_WORDS", "AUDIT_WORDS", "DIFF_WORDS", "check_language"]

DEFAULT_LANGUAGE = "ko"

WORDS: dict[str, dict[str, object]] = {
    "ko": {
        "title": "임베딩 표에서 로짓까지: 실험 보고서",
        "seed_source": "시드 표 make_table({vocab}, {dim}, {seed})",
        "headings": (
            "무엇을 쟀나",
            "조회와 원-핫 곱은 같은 연산이다",
            "가중치를 묶으면 무엇이 줄어드나",
            "내적과 코사인이 갈리는 자리",
            "√d 를 곱하면 무엇이 달라지나",
        ),
        "table_of": ("{source}의 토큰 임베딩 표", "{source}의 출력 머리", "{source}의 출력 머리(묶임: 토큰 임베딩 표)"),
        "what": (
            "{table_of}: 토큰 V = {vocab}개, 토큰마다 D = {dim}개의 수, 모양 {table_shape}, "
            "매개변수 {params}개. 아래 실험은 모두 탐침 토큰 {probe} 하나를 두고 한다. 이웃 목록은 k = {k}개, "
            "늘이는 행은 코사인 이웃 {rank}위의 토큰({stretch_factor}배), 어휘는 {growth_factor}배로 키운다. "
            "모든 수는 이 표에서 코드를 실행해 얻었다."
        ),
        "lookup": (
            "탐침 토큰 {probe}의 벡터를 조회하면 표에서 그 행을 꺼낼 뿐이라 곱셈이 {lookup_mults}번 든다. 같은 토큰의 "
            "원-핫 벡터(길이 {vocab})에 표를 곱해도 같은 수가 나오지만, 곱셈이 V × D = {one_hot_mults}번 든다. "
            "두 벡터의 가장 큰 차이는 {max_abs_diff}이다. 같은 토큰을 두 번 조회하면 {repeat}."
        ),
        "repeat": ("같은 벡터가 나온다", "다른 벡터가 나온다"),
        "tying": (
            "출력 머리는 같은 표를 다시 쓸 수 있다(가중치 묶기): 로짓 = 표 × 은닉 벡터, 토큰마다 점수 하나씩 "
            "모두 {logit_len}개. 탐침 자신의 벡터로 점수를 매기면 가장 큰 로짓은 토큰 {logit_argmax}의 것이며, "
            "{is_self}. 묶으면 표와 머리의 매개변수는 {tied_params}개, 따로 두면 {untied_params}개로, 묶기가 "
            "{saved}개를 줄인다. 어휘가 {bigger_vocab}개로 커지면 묶어서 {bigger_tied}개, 따로 두면 "
            "{bigger_untied}개다."
        ),
        "is_self": ("탐침 자신이다", "탐침 자신이 아니다: 탐침보다 짧지 않은 행이 이긴다"),
        "neighbors": (
            "코사인으로 본 토큰 {probe}의 가까운 토큰: {cos_neighbors}. 내적으로 본 가까운 토큰: "
            "{dot_neighbors}. 두 목록은 {differ}. 내적은 각 행의 길이를 곱해 넣고, 코사인은 길이를 나눠 "
            "없앤다. {stretched}"
        ),
        "stretched": (
            "토큰 {stretch_target}의 행을 {stretch_factor}배로 늘이면 드러난다. 늘인 뒤 코사인 목록: {cos_after_stretch}. "
            "내적 목록: {dot_after_stretch}.",
            "토큰 {stretch_target}의 행을 {stretch_factor}배로 늘여도 두 목록은 그대로다. 늘인 뒤 코사인 목록: "
            "{cos_after_stretch}. 내적 목록: {dot_after_stretch}.",
        ),
        "differ": ("다르다", "같다"),
        "scale": (
            "조회한 벡터에 √D(= √{dim})를 곱하면(Vaswani 외 2017, 3.4절) 길이가 커진다. rms: 곱하기 전 "
            "{rms_plain}, 곱한 뒤 {rms_scaled}, 비율 {rms_ratio}. 방향은 그대로다: 두 토큰 {probe}, {other} 사이의 "
            "코사인은 {unchanged}."
        ),
        "unchanged": ("곱하기 전과 후가 같다", "곱한 뒤 반올림 이상으로 달라졌다"),
        "captions": {
            "projection": "탐침, 그 코사인·내적 이웃, 무작위 표본의 2차원 투영(PCA). 2차원 거리는 D차원 거리의 한 단면일 뿐이다.",
            "norms": "행 길이(노름)의 분포와 가장 긴 행들.",
            "cost": "같은 벡터를 얻는 두 길에서 토큰 하나당 읽는 표의 값 개수(로그 눈금): 조회는 한 행을 읽고 곱셈이 없으며, 원-핫 곱은 모든 행을 읽고 값마다 한 번 곱한다.",
            "params": "표와 출력 머리의 매개변수: 묶었을 때와 따로 둘 때, 지금 어휘와 더 큰 어휘에서.",
            "stretch": "한 행을 늘이기 전과 후의 코사인 목록과 내적 목록(빨강: 늘인 행).",
            "scale": "√D를 곱하기 전과 후: 길이는 커지고 탐침과의 코사인은 그대로다.",
        },
        "table_header": ("값", "잰 수"),
        "figure_left_out": "이 그림은 뺐다: {reason}",
        "note": "참고",
        "run": ("embedlab {version}, {date}(UTC)에 만듦. 명령: {command}", "embedlab {version}, {date}(UTC)에 만듦."),
        "alt": {
            "projection": "{method}로 2차원에 투영한 행 {n}개의 산점도. 축 1은 {x0}에서 {x1}까지, 축 2는 {y0}에서 {y1}까지. "
                          "탐침 {probe}의 자리는 {at}. {groups}.",
            "group": "{name}({n}개): {items}",
            "sample": "무작위 표본 {n}개",
            "groups": {"cosine": "코사인 이웃", "dot": "내적 이웃", "both": "두 목록 모두에 든 이웃", "chosen": "고른 행"},
            "norms": "행 {n}개의 노름 히스토그램: {low}부터 {high}까지 구간 {bins}개, 행 수는 로그 눈금. 가장 많은 구간({a}–{b})에 "
                     "{peak}개가 있다. 가장 긴 행 {top}개: {longest}.",
            "cost": "막대그래프(로그 눈금): 탐침의 벡터를 조회로 얻으면 표의 값 {lookup_read}개(한 행, D = {D})를 읽고 곱셈은 "
                    "{lookup}번, 원-핫 곱으로 얻으면 값 {one_hot}개(V × D = {V} × {D})를 읽고 곱셈도 {one_hot}번. "
                    "두 벡터의 가장 큰 차이는 {diff}.",
            "params": "표와 출력 머리의 매개변수 막대그래프: V = {V}일 때 묶으면 {tied}개, 따로 두면 {untied}개; V = {bigger_V}일 때 "
                      "묶으면 {bigger_tied}개, 따로 두면 {bigger_untied}개.",
            "stretch": "탐침 {probe}에 가장 가까운 행 {k}개의 막대그래프 네 개(가까운 순). 늘이기 전 코사인: {cos_before}. 늘이기 전 "
                       "내적: {dot_before}. {target} 행을 ×{factor}로 늘인 뒤 코사인: {cos_after}; 내적: {dot_after}.",
            "scale": "왼쪽: 행 {n}개의 길이, √D = {factor}를 곱하기 전 → 후: {lengths}. 오른쪽: 각 행과 탐침 {probe}의 코사인, "
                     "곱하기 전 → 후: {cosines}.",
            "sep": ", ",
            "clause_sep": "; ",
        },
        "scale_zero": (
            "탐침 토큰 {probe}의 벡터는 영벡터다: √D(= √{dim})를 곱해도(Vaswani 외 2017, 3.4절) 그대로 0이고(rms: 곱하기 전 "
            "{rms_plain}, 곱한 뒤 {rms_scaled}), 영벡터에는 방향이 없다. 이 실험실의 규칙에 따라 영벡터와의 코사인은 0.0이다."
        ),
        "figures": {
            "projection_pca": ": 유클리드 분산이 가장 큰 방향 ({fitted}개 행으로 맞춤)",
            "projection_keeps": ": {metric} 이웃 관계를 지킨다 ({settings})",
            "metric_cosine": "코사인",
            "metric_euclidean": "유클리드",
            "labelled_note": "점 {total}개 중 {placed}개에 이름표, {left}개는 이름표 없음",
            "norms_unplaced": " (나머지 {more}개는 표시만: 이름표 자리가 없다)",
            "compress_title": "{table}: 벡터를 줄여도 남는 이웃 (쿼리 {queries}개, k = {k})",
            "compress_bytes": "토큰 하나의 바이트, 코드북·축 등 함께 저장하는 데이터 포함 (로그 눈금)",
            "compress_recall": "recall@{k} (정확한 상위 {k}개 중 남은 몫)",
            "compress_cosine": "코사인",
            "compress_dot": "내적",
            "compress_full": "원래 표 ({bytes}바이트)",
            "compress_rescored": "{method}, 상위 {shortlist}개 재채점",
            "cosine_axis": "코사인 유사도(단위 없음)",
            "dot_axis": "내적(표 단위의 제곱)",
            "undrawn": "설치된 글꼴에 글자가 없어 그리지 못한 토큰(�로 표시): {tokens}",
            "projection_title": "{table} 표의 {rows}개 행을 {method}로 투영",
            "projection_axis": "{method} 축 {axis}(임의 단위)",
            "projection_note": "2차원 거리는 D차원 거리의 한 단면일 뿐이다",
            "projection_left_out": "퇴화한 행 {count}개는 맞춤과 그림에서 뺐다(--keep-degenerate로 포함): {rows}",
            "projection_kept": "퇴화한 행 {count}개를 맞춤에 넣었다(--keep-degenerate): {rows}",
            "degenerate_zero": "모두 0",
            "degenerate_copy": "id {of}의 복사본",
            "degenerate_long": "길이 > {limit}(중앙값 + 10 MAD)",
            "group_probe": "탐침",
            "group_cosine": "코사인 이웃",
            "group_dot": "내적 이웃",
            "group_both": "두 목록 모두",
            "group_sample": "무작위 표본",
            "group_chosen": "고른 토큰",
            "norms_title": "{table} 표의 행 노름(행 {rows}개), 가장 긴 {top}개에 이름표",
            "norms_axis": "행 노름(L2 길이, 표 단위)",
            "norms_rows": "구간별 행 수(로그 눈금)",
            "norms_bins": "행",
            "norms_longest": "가장 긴 행",
            "stretch_title": "{probe}의 이웃: {target}(빨강)을 ×{factor} 늘이면 내적 목록에서만 자리가 바뀐다",
            "stretch_title_in": "{table}에서 {probe}의 이웃: {target}(빨강)을 ×{factor} 늘이면 내적 목록에서만 자리가 바뀐다",
            "cosine_before": "코사인, 늘이기 전",
            "dot_before": "내적, 늘이기 전",
            "cosine_after": "코사인, ×{factor} 늘인 뒤",
            "dot_after": "내적, ×{factor} 늘인 뒤",
            "with_norm": "{token} (노름 {norm})",
            "stretched_row": "늘인 행",
            "scale_title": "√D 곱하기(Vaswani 외 2017, 3.4절): {probe} 근처의 행",
            "scale_title_in": "√D 곱하기(Vaswani 외 2017, 3.4절): {table}에서 {probe} 근처의 행",
            "size_changes": "길이는 달라지고",
            "direction_stays": "방향은 그대로다",
            "scale_unplaced": "{left}개 점은 이름표 자리가 없다",
            "before": "곱하기 전",
            "after_scale": "√D = {factor} 곱한 뒤",
            "length_axis": "벡터 길이(L2, 표 단위)",
            "after_equals_before": "곱한 뒤 = 곱하기 전",
            "neighbours": "탐침의 이웃",
            "cos_before_scale": "곱하기 전 탐침과의 코사인(단위 없음)",
            "cos_after_scale": "곱한 뒤 탐침과의 코사인(단위 없음)",
            "cost_title": "같은 벡터, 두 길(V = {vocab}, D = {dim}), 가장 큰 차이 {diff}",
            "route_lookup": "조회(한 행)",
            "route_one_hot": "원-핫 × 표(V개 행 전부)",
            "cost_axis": "토큰 하나당 읽는 표의 값 개수(로그 눈금)",
            "cost_bar": "값 {numbers}개 읽기, 곱셈 {mults}번",
            "params_title": "가중치를 묶으면 매개변수가 V × D개 준다(D = {dim})",
            "params_axis": "매개변수",
            "tied": "묶음(표 하나)",
            "untied": "따로(표 + 머리)",
            "positions_title": "{table}의 위치 표: T_max = {T_max}, D = {D}",
            "no_learned": "{table}에는 학습된 위치 표가 없어 사인파 표만 그렸다",
            "positions_offset": "{stored}행 표의 0–{last}행은 뺐다: {family}는 위치를 {offset}행부터 센다(위치 p는 p + {offset}행)",
            "positions_config": "T_max = {T_max}: config의 max_position_embeddings",
            "positions_default": "T_max = {T_max}: 기본값(config가 T_max를 주지 않는다)",
            "positions_drawn": "위치 {T_max}개 가운데 앞의 {drawn}개만 재고 그렸다",
            "positions_step": "열지도는 위치 {step}개마다 하나를 보인다",
            "position_map": "위치 p와 q의 코사인, {name}",
            "position_p": "위치 p(0부터)",
            "position_q": "위치 q(0부터)",
            "learned": "학습된 표",
            "learned_of": "학습된 표({table})",
            "sinusoidal": "사인파 표",
            "adjacent_title": "이웃한 위치: p와 p + 1의 코사인",
            "offset_title": "p와 p + k의 평균 코사인",
            "offset_axis": "간격 k(위치 수, 로그 눈금)",
            "mean_cosine_axis": "평균 코사인 유사도(단위 없음)",
            "bands_title": "사인파 위치의 파장 띠",
            "bands_strip": "사인·코사인 쌍마다 띠 하나: D를 반으로 줄이면 범위는 그대로, 띠는 반으로",
            "bands_curve": "파장 = 2π · base^(2k / D), base = {base}",
            "band_count": "D = {width}: 띠 {bands}개",
            "wavelength_axis": "파장(위치 수, 로그 눈금)",
            "model_width": "모델 너비",
            "pair_axis": "쌍 번호 2k / D(단위 없음)",
        },
    },
    "en": {
        "title": "From the embedding table to the logits: lab report",
        "seed_source": "the seed table make_table({vocab}, {dim}, {seed})",
        "headings": (
            "What was measured",
            "Lookup and the one-hot product are the same operation",
            "What tying the weights saves",
            "Where dot product and cosine part ways",
            "What multiplying by √d changes",
        ),
        "table_of": ("The token-embedding table of {source}", "The output head of {source}",
                     "The output head of {source} (tied: the token-embedding table)"),
        "what": (
            "{table_of}: V = {vocab} tokens of D = {dim} numbers each, shape "
            "{table_shape}, {params} parameters. Every experiment below is about one probe token, {probe}. "
            "Neighbour lists hold k = {k} tokens; the row stretched is the cosine neighbour at rank {rank} "
            "(×{stretch_factor}); the vocabulary grows ×{growth_factor}. Every number was produced by running "
            "the code on this table."
        ),
        "lookup": (
            "Looking up token {probe} takes its row from the table: {lookup_mults} multiplications. Multiplying "
            "its one-hot vector (length {vocab}) by the table gives the same numbers at a cost of "
            "V × D = {one_hot_mults} multiplications. The largest difference between the two vectors is "
            "{max_abs_diff}. Looking the token up twice {repeat}."
        ),
        "repeat": ("gives equal vectors", "gives different vectors"),
        "tying": (
            "The output head can reuse the table (weight tying): logits = table × hidden vector, one score per "
            "token, {logit_len} in all. Scoring the probe's own vector, the largest logit is token "
            "{logit_argmax}'s: {is_self}. Tied, the table and the head hold {tied_params} parameters; untied, "
            "{untied_params}: tying saves {saved}. At a vocabulary of {bigger_vocab} they hold {bigger_tied} "
            "tied and {bigger_untied} untied."
        ),
        "is_self": ("the probe itself", "not the probe itself: a row at least as long as the probe's wins"),
        "neighbors": (
            "Nearest tokens of {probe} by cosine: {cos_neighbors}. By dot product: {dot_neighbors}. The two "
            "lists {differ}. The dot product multiplies in each row's length; cosine divides it out. {stretched}"
        ),
        "stretched": (
            "Stretching token {stretch_target}'s row ×{stretch_factor} shows it: the cosine list becomes "
            "{cos_after_stretch}, the dot-product list {dot_after_stretch}.",
            "Stretching token {stretch_target}'s row ×{stretch_factor} leaves both lists as they were: cosine "
            "{cos_after_stretch}, dot product {dot_after_stretch}.",
        ),
        "differ": ("differ", "agree"),
        "scale": (
            "Multiplying looked-up vectors by √D = √{dim} (Vaswani et al. 2017, section 3.4) makes them longer: "
            "rms {rms_plain} before, {rms_scaled} after, a ratio of {rms_ratio}. The direction stays: the cosine "
            "between tokens {probe} and {other} {unchanged}."
        ),
        "unchanged": ("is the same before and after", "changed by more than rounding"),
        "captions": {
            "projection": "The probe, its cosine and dot-product neighbours and a random sample, projected to 2-D (PCA). 2-D distances are only a view of the D-dimensional ones.",
            "norms": "The distribution of row lengths (norms) and the longest rows.",
            "cost": "Table entries read per token on the two routes to the same vector (log scale): lookup reads one row and multiplies nothing; the one-hot product reads every row and multiplies each entry once.",
            "params": "Parameters of the table and the output head, tied and untied, at today's vocabulary and a bigger one.",
            "stretch": "The cosine and dot-product lists before and after one row is stretched (red: the stretched row).",
            "scale": "Before and after multiplying by √D: lengths grow, the cosine with the probe stays.",
        },
        "table_header": ("key", "measured"),
        "figure_left_out": "Figure left out: {reason}",
        "note": "Note",
        "run": ("Written by embedlab {version} on {date} (UTC) with {command}",
                "Written by embedlab {version} on {date} (UTC)."),
        "alt": {
            "projection": "Scatter plot of {n} rows projected to 2-D by {method}; axis 1 runs from {x0} to {x1}, axis 2 from "
                          "{y0} to {y1}. The probe, {probe}, is at {at}; {groups}.",
            "group": "{name} ({n}): {items}",
            "sample": "{n} sampled rows",
            "groups": {"cosine": "cosine neighbours", "dot": "dot-product neighbours", "both": "neighbours in both lists",
                       "chosen": "chosen rows"},
            "norms": "Histogram of {n} row norms from {low} to {high} in {bins} bins, rows counted on a log scale; the "
                     "fullest bin, {a} to {b}, holds {peak} rows. The {top} longest rows: {longest}.",
            "cost": "Bar chart (log scale): the probe's vector by lookup reads {lookup_read} table entries (one row, "
                    "D = {D}) with {lookup} multiplications; by the one-hot product it reads {one_hot} entries "
                    "(V × D = {V} × {D}) with {one_hot} multiplications; the two vectors differ by at most {diff}.",
            "params": "Bar chart of the parameters of the table and the output head: at V = {V}, {tied} tied and "
                      "{untied} untied; at V = {bigger_V}, {bigger_tied} tied and {bigger_untied} untied.",
            "stretch": "Four bar charts of the {k} nearest rows to the probe {probe}, nearest first. Cosine before: "
                       "{cos_before}. Dot product before: {dot_before}. After stretching the row of {target} "
                       "×{factor}, cosine: {cos_after}; dot product: {dot_after}.",
            "scale": "Left, the lengths of {n} rows before → after multiplying by √D = {factor}: {lengths}. Right, each "
                     "row's cosine with the probe {probe} before → after: {cosines}.",
            "sep": ", ",
            "clause_sep": "; ",
        },
        "scale_zero": (
            "The vector of the probe {probe} is zero: multiplying it by √D = √{dim} (Vaswani et al. 2017, section 3.4) "
            "leaves it zero (rms {rms_plain} before, {rms_scaled} after), and a zero vector has no direction; by the "
            "lab's rule its cosine with any vector is 0.0."
        ),
        "figures": {
            "projection_pca": ": directions of largest euclidean variance, fitted on {fitted} rows",
            "projection_keeps": ": keeps {metric} neighbourhoods ({settings})",
            "metric_cosine": "cosine",
            "metric_euclidean": "euclidean",
            "labelled_note": "{placed} of {total} points labelled, {left} left unlabelled",
            "norms_unplaced": " ({more} more marked, with no room for a label)",
            "compress_title": "{table}: neighbours kept as the vectors shrink ({queries} queries, k = {k})",
            "compress_bytes": "bytes per token, codebooks, axes and ranges included (log scale)",
            "compress_recall": "recall@{k} (share of the exact top {k} kept)",
            "compress_cosine": "cosine",
            "compress_dot": "dot product",
            "compress_full": "full table ({bytes} bytes)",
            "compress_rescored": "{method}, top {shortlist} rescored",
            "cosine_axis": "cosine similarity (unitless)",
            "dot_axis": "dot product (table units squared)",
            "undrawn": "No installed font has every character of these tokens (drawn as �): {tokens}",
            "projection_title": "{method} of {rows} rows of the {table} table",
            "projection_axis": "{method} axis {axis} (arbitrary units)",
            "projection_note": "2-D distances are only a view of the D-dimensional ones",
            "projection_left_out": "Left out of the fit and the picture as degenerate ({count}; --keep-degenerate keeps them): {rows}",
            "projection_kept": "Kept in the fit though degenerate ({count}; --keep-degenerate): {rows}",
            "degenerate_zero": "all zeros",
            "degenerate_copy": "a copy of id {of}",
            "degenerate_long": "length > {limit} (median + 10 MAD)",
            "group_probe": "probe",
            "group_cosine": "cosine neighbour",
            "group_dot": "dot-product neighbour",
            "group_both": "in both lists",
            "group_sample": "random sample",
            "group_chosen": "chosen tokens",
            "norms_title": "Row norms of the {table} table ({rows} rows), longest {top} labelled",
            "norms_axis": "row norm (L2 length, table units)",
            "norms_rows": "rows per bin (log scale)",
            "norms_bins": "rows",
            "norms_longest": "longest rows",
            "stretch_title": "Neighbours of {probe}: stretching {target} (red) ×{factor} moves it in the dot list only",
            "stretch_title_in": "Neighbours of {probe} in {table}: stretching {target} (red) ×{factor} moves it in the dot list only",
            "cosine_before": "cosine, before",
            "dot_before": "dot product, before",
            "cosine_after": "cosine, after ×{factor}",
            "dot_after": "dot product, after ×{factor}",
            "with_norm": "{token} (norm {norm})",
            "stretched_row": "stretched row",
            "scale_title": "Scaling by √D (Vaswani et al. 2017, section 3.4): rows near {probe}",
            "scale_title_in": "Scaling by √D (Vaswani et al. 2017, section 3.4): rows of {table} near {probe}",
            "size_changes": "Size changes",
            "direction_stays": "Direction does not",
            "scale_unplaced": "{left} points without room for a label",
            "before": "before",
            "after_scale": "after × √D = {factor}",
            "length_axis": "vector length (L2, table units)",
            "after_equals_before": "after = before",
            "neighbours": "neighbours of the probe",
            "cos_before_scale": "cosine with the probe before scaling (unitless)",
            "cos_after_scale": "cosine with the probe after scaling (unitless)",
            "cost_title": "Same vector, two routes (V = {vocab}, D = {dim}); largest difference {diff}",
            "route_lookup": "lookup (one row)",
            "route_one_hot": "one-hot × table (all V rows)",
            "cost_axis": "table entries read per token (log scale)",
            "cost_bar": "{numbers} entries read, {mults} multiplications",
            "params_title": "Weight tying saves V × D parameters (D = {dim})",
            "params_axis": "parameters",
            "tied": "tied (one table)",
            "untied": "untied (table + head)",
            "positions_title": "Position tables of {table}: T_max = {T_max}, D = {D}",
            "no_learned": "{table} has no learned position table: the sinusoidal table alone is drawn",
            "positions_offset": "rows 0–{last} of the {stored}-row table left out: {family} numbers positions from row {offset} (position p is row p + {offset})",
            "positions_config": "T_max = {T_max}: the config's max_position_embeddings",
            "positions_default": "T_max = {T_max}: the default (no config gives T_max)",
            "positions_drawn": "the first {drawn} of the {T_max} positions measured and drawn",
            "positions_step": "the heatmaps show one position in {step}",
            "position_map": "cosine of positions p and q, {name}",
            "position_p": "position p (0-based)",
            "position_q": "position q (0-based)",
            "learned": "learned",
            "learned_of": "learned ({table})",
            "sinusoidal": "sinusoidal",
            "adjacent_title": "adjacent positions: cosine of p and p + 1",
            "offset_title": "mean cosine of p and p + k",
            "offset_axis": "offset k (positions, log scale)",
            "mean_cosine_axis": "mean cosine similarity (unitless)",
            "bands_title": "Sinusoidal wavelength bands",
            "bands_strip": "one band per sin/cos pair: halving D keeps the range, halves the bands",
            "bands_curve": "wavelength = 2π · base^(2k / D), base = {base}",
            "band_count": "D = {width}: {bands} bands",
            "wavelength_axis": "wavelength (positions, log scale)",
            "model_width": "model width",
            "pair_axis": "pair index 2k / D (unitless)",
        },
    },
    "ja": {
        "title": "埋め込み表からロジットまで：実験レポート",
        "seed_source": "シード表 make_table({vocab}, {dim}, {seed})",
        "headings": (
            "何を測ったか",
            "埋め込みの参照とワンホット積は同じ演算である",
            "重みを共有すると何が減るか",
            "内積とコサインが分かれるところ",
            "√d を掛けると何が変わるか",
        ),
        "table_of": ("{source} のトークン埋め込み表", "{source} の出力ヘッド", "{source} の出力ヘッド（共有：トークン埋め込み表）"),
        "what": (
            "{table_of}：トークン V = {vocab} 個、各トークン D = {dim} 個の数、形 "
            "{table_shape}、パラメータ {params} 個。以下の実験はすべてプローブトークン {probe} についてのもの。"
            "近傍リストは k = {k} 個、伸ばす行はコサイン近傍 {rank} 位のトークン（×{stretch_factor}）、語彙は "
            "×{growth_factor} に増やす。数値はすべてこの表でコードを実行して得た。"
        ),
        "lookup": (
            "トークン {probe} を参照すると表からその行を取り出すだけで、掛け算は {lookup_mults} 回。同じトークンの"
            "ワンホットベクトル（長さ {vocab}）に表を掛けても同じ数が得られるが、掛け算は V × D = {one_hot_mults} "
            "回かかる。二つのベクトルの最大の差は {max_abs_diff}。同じトークンを二度参照すると{repeat}。"
        ),
        "repeat": ("同じベクトルが返る", "違うベクトルが返る"),
        "tying": (
            "出力ヘッドは同じ表を使い回せる（重み共有）：ロジット = 表 × 隠れベクトル、トークンごとに一つ、全部で "
            "{logit_len} 個。プローブ自身のベクトルで採点すると、最大のロジットはトークン {logit_argmax} のもので、"
            "{is_self}。共有すれば表とヘッドのパラメータは {tied_params} 個、別々なら {untied_params} 個で、共有により "
            "{saved} 個減る。語彙が {bigger_vocab} 個になると、共有で {bigger_tied} 個、別々で {bigger_untied} 個。"
        ),
        "is_self": ("プローブ自身である", "プローブ自身ではない：プローブ以上の長さの行が勝つ"),
        "neighbors": (
            "コサインで見たトークン {probe} の近傍：{cos_neighbors}。内積で見た近傍：{dot_neighbors}。二つのリストは"
            "{differ}。内積は各行の長さを掛け込み、コサインは長さを割って消す。{stretched}"
        ),
        "stretched": (
            "トークン {stretch_target} の行を ×{stretch_factor} に伸ばすとそれが見える：コサインのリストは "
            "{cos_after_stretch}、内積のリストは {dot_after_stretch} になる。",
            "トークン {stretch_target} の行を ×{stretch_factor} に伸ばしても二つのリストは変わらない：コサインは "
            "{cos_after_stretch}、内積は {dot_after_stretch} のまま。",
        ),
        "differ": ("異なる", "一致する"),
        "scale": (
            "参照したベクトルに √D = √{dim} を掛けると（Vaswani ら 2017、3.4 節）長くなる：rms は {rms_plain} から "
            "{rms_scaled} へ、比は {rms_ratio}。向きは変わらない：トークン {probe} と {other} のコサインは{unchanged}。"
        ),
        "unchanged": ("掛ける前と後で同じ", "丸め誤差を超えて変わった"),
        "captions": {
            "projection": "プローブ、そのコサイン近傍と内積近傍、無作為な標本の 2 次元射影（PCA）。2 次元の距離は D 次元の距離の一つの見え方にすぎない。",
            "norms": "行の長さ（ノルム）の分布と最も長い行。",
            "cost": "同じベクトルに至る二つの道で、トークン一つあたりに読む表の要素数（対数目盛）：参照は一行を読み掛け算はなく、ワンホット積はすべての行を読み要素ごとに一回掛ける。",
            "params": "表と出力ヘッドのパラメータ数：共有と非共有、今の語彙と大きな語彙で。",
            "stretch": "一つの行を伸ばす前と後のコサインのリストと内積のリスト（赤：伸ばした行）。",
            "scale": "√D を掛ける前と後：長さは増え、プローブとのコサインは変わらない。",
        },
        "table_header": ("キー", "測定値"),
        "figure_left_out": "この図は省いた：{reason}",
        "note": "注",
        "run": ("embedlab {version} が {date}（UTC）に作成。コマンド：{command}", "embedlab {version} が {date}（UTC）に作成。"),
        "alt": {
            "projection": "{method} で 2 次元に射影した {n} 行の散布図。軸 1 は {x0} から {x1}、軸 2 は {y0} から {y1} まで。"
                          "プローブ {probe} の位置は {at}。{groups}。",
            "group": "{name}（{n} 個）：{items}",
            "sample": "無作為標本 {n} 個",
            "groups": {"cosine": "コサイン近傍", "dot": "内積近傍", "both": "両方のリストにある近傍", "chosen": "選んだ行"},
            "norms": "{n} 行のノルムのヒストグラム：{low} から {high} まで {bins} 区間、行数は対数目盛。最も多い区間（{a}–{b}）に "
                     "{peak} 行。最も長い {top} 行：{longest}。",
            "cost": "棒グラフ（対数目盛）：プローブのベクトルを参照で得ると表の要素 {lookup_read} 個（一行、D = {D}）を読み掛け算 "
                    "{lookup} 回、ワンホット積では要素 {one_hot} 個（V × D = {V} × {D}）を読み掛け算も {one_hot} 回。"
                    "二つのベクトルの最大の差は {diff}。",
            "params": "表と出力ヘッドのパラメータ数の棒グラフ：V = {V} で共有 {tied} 個、非共有 {untied} 個；V = {bigger_V} で"
                      "共有 {bigger_tied} 個、非共有 {bigger_untied} 個。",
            "stretch": "プローブ {probe} に最も近い {k} 行の棒グラフ四つ（近い順）。伸ばす前のコサイン：{cos_before}。伸ばす前の"
                       "内積：{dot_before}。{target} の行を ×{factor} に伸ばした後のコサイン：{cos_after}；内積：{dot_after}。",
            "scale": "左：{n} 行の長さ、√D = {factor} を掛ける前 → 後：{lengths}。右：各行とプローブ {probe} のコサイン、"
                     "掛ける前 → 後：{cosines}。",
            "sep": "、",
            "clause_sep": "；",
        },
        "scale_zero": (
            "プローブ {probe} のベクトルはゼロベクトルである：√D = √{dim} を掛けても（Vaswani ら 2017、3.4 節）ゼロのまま"
            "（rms は {rms_plain} から {rms_scaled}）で、ゼロベクトルには向きがない。この実験の規則では、ゼロベクトルとの"
            "コサインは 0.0 とする。"
        ),
        "figures": {
            "projection_pca": "：ユークリッド分散が最大の方向（{fitted} 行で当てはめ）",
            "projection_keeps": "：{metric}の近傍を保つ（{settings}）",
            "metric_cosine": "コサイン",
            "metric_euclidean": "ユークリッド距離",
            "labelled_note": "点 {total} 個のうち {placed} 個にラベル、{left} 個はラベルなし",
            "norms_unplaced": "（ほか {more} 個は印のみ：ラベルの場所がない）",
            "compress_title": "{table}：ベクトルを縮めたときに残る近傍（クエリ {queries} 個、k = {k}）",
            "compress_bytes": "トークン 1 個のバイト数、コードブック・軸などの付随データ込み（対数目盛）",
            "compress_recall": "recall@{k}（正確な上位 {k} 個のうち残った割合）",
            "compress_cosine": "コサイン",
            "compress_dot": "内積",
            "compress_full": "元の表（{bytes} バイト）",
            "compress_rescored": "{method}、上位 {shortlist} 個を再採点",
            "cosine_axis": "コサイン類似度（単位なし）",
            "dot_axis": "内積（表の単位の二乗）",
            "undrawn": "インストール済みのフォントに文字がなく描けなかったトークン（� で表示）：{tokens}",
            "projection_title": "{table} 表の {rows} 行の {method} 射影",
            "projection_axis": "{method} 軸 {axis}（任意単位）",
            "projection_note": "2 次元の距離は D 次元の距離の一つの見え方にすぎない",
            "projection_left_out": "退化した行 {count} 個を当てはめと図から除いた（--keep-degenerate で含める）：{rows}",
            "projection_kept": "退化した行 {count} 個を当てはめに含めた（--keep-degenerate）：{rows}",
            "degenerate_zero": "すべて 0",
            "degenerate_copy": "id {of} の複製",
            "degenerate_long": "長さ > {limit}（中央値 + 10 MAD）",
            "group_probe": "プローブ",
            "group_cosine": "コサイン近傍",
            "group_dot": "内積近傍",
            "group_both": "両方のリスト",
            "group_sample": "無作為な標本",
            "group_chosen": "選んだトークン",
            "norms_title": "{table} 表の行ノルム（{rows} 行）、最も長い {top} 行に名前",
            "norms_axis": "行ノルム（L2 長さ、表の単位）",
            "norms_rows": "区間ごとの行数（対数目盛）",
            "norms_bins": "行",
            "norms_longest": "最も長い行",
            "stretch_title": "{probe} の近傍：{target}（赤）を ×{factor} に伸ばすと内積のリストでだけ順位が動く",
            "stretch_title_in": "{table} での {probe} の近傍：{target}（赤）を ×{factor} に伸ばすと内積のリストでだけ順位が動く",
            "cosine_before": "コサイン、伸ばす前",
            "dot_before": "内積、伸ばす前",
            "cosine_after": "コサイン、×{factor} に伸ばした後",
            "dot_after": "内積、×{factor} に伸ばした後",
            "with_norm": "{token}（ノルム {norm}）",
            "stretched_row": "伸ばした行",
            "scale_title": "√D を掛ける（Vaswani ら 2017、3.4 節）：{probe} の近くの行",
            "scale_title_in": "√D を掛ける（Vaswani ら 2017、3.4 節）：{table} で {probe} の近くの行",
            "size_changes": "長さは変わる",
            "direction_stays": "向きは変わらない",
            "scale_unplaced": "{left} 点はラベルの場所がない",
            "before": "掛ける前",
            "after_scale": "√D = {factor} を掛けた後",
            "length_axis": "ベクトルの長さ（L2、表の単位）",
            "after_equals_before": "後 = 前",
            "neighbours": "プローブの近傍",
            "cos_before_scale": "掛ける前のプローブとのコサイン（単位なし）",
            "cos_after_scale": "掛けた後のプローブとのコサイン（単位なし）",
            "cost_title": "同じベクトルに至る二つの道（V = {vocab}、D = {dim}）、最大の差 {diff}",
            "route_lookup": "参照（一行）",
            "route_one_hot": "ワンホット × 表（V 行すべて）",
            "cost_axis": "トークン一つあたりに読む表の要素数（対数目盛）",
            "cost_bar": "要素 {numbers} 個を読み、掛け算 {mults} 回",
            "params_title": "重みを共有するとパラメータが V × D 個減る（D = {dim}）",
            "params_axis": "パラメータ",
            "tied": "共有（表一つ）",
            "untied": "非共有（表 + ヘッド）",
            "positions_title": "{table} の位置表：T_max = {T_max}、D = {D}",
            "no_learned": "{table} には学習済みの位置表がないため、正弦波の表だけを描いた",
            "positions_offset": "{stored} 行の表の 0–{last} 行目は除いた：{family} は位置を {offset} 行目から数える（位置 p は p + {offset} 行目）",
            "positions_config": "T_max = {T_max}：config の max_position_embeddings",
            "positions_default": "T_max = {T_max}：既定値（config に T_max がない）",
            "positions_drawn": "{T_max} 個の位置のうち最初の {drawn} 個だけを測って描いた",
            "positions_step": "ヒートマップは {step} 位置ごとに 1 つを示す",
            "position_map": "位置 p と q のコサイン、{name}",
            "position_p": "位置 p（0 始まり）",
            "position_q": "位置 q（0 始まり）",
            "learned": "学習済みの表",
            "learned_of": "学習済みの表（{table}）",
            "sinusoidal": "正弦波の表",
            "adjacent_title": "隣り合う位置：p と p + 1 のコサイン",
            "offset_title": "p と p + k の平均コサイン",
            "offset_axis": "オフセット k（位置数、対数目盛）",
            "mean_cosine_axis": "平均コサイン類似度（単位なし）",
            "bands_title": "正弦波位置の波長の帯",
            "bands_strip": "sin/cos の組ごとに帯が一つ：D を半分にすると範囲は同じで帯は半分",
            "bands_curve": "波長 = 2π · base^(2k / D)、base = {base}",
            "band_count": "D = {width}：帯 {bands} 本",
            "wavelength_axis": "波長（位置数、対数目盛）",
            "model_width": "モデル幅",
            "pair_axis": "組の番号 2k / D（単位なし）",
        },
    },
    "zh": {
        "title": "从嵌入表到 logits：实验报告",
        "seed_source": "种子表 make_table({vocab}, {dim}, {seed})",
        "headings": (
            "测量了什么",
            "查表与独热向量乘积是同一个运算",
            "权重共享省下了什么",
            "点积与余弦分道扬镳之处",
            "乘以 √d 改变了什么",
        ),
        "table_of": ("{source} 的词元嵌入表", "{source} 的输出头", "{source} 的输出头（共享：词元嵌入表）"),
        "what": (
            "{table_of}：V = {vocab} 个词元，每个词元 D = {dim} 个数，形状 {table_shape}，共 {params} "
            "个参数。以下实验都围绕一个探针词元 {probe}。近邻列表取 k = {k} 个；被拉长的行是余弦近邻第 {rank} 名的"
            "词元（×{stretch_factor}）；词表扩大 ×{growth_factor}。所有数字都是在这张表上运行代码得到的。"
        ),
        "lookup": (
            "查表取词元 {probe} 只是从表中取出它的那一行：乘法 {lookup_mults} 次。用它的独热向量（长度 {vocab}）乘以"
            "整张表得到的是同样的数，却要 V × D = {one_hot_mults} 次乘法。两个向量的最大差为 {max_abs_diff}。"
            "同一个词元查两次{repeat}。"
        ),
        "repeat": ("得到相同的向量", "得到不同的向量"),
        "tying": (
            "输出头可以复用同一张表（权重共享）：logits = 表 × 隐藏向量，每个词元一个分数，共 {logit_len} 个。"
            "用探针自身的向量打分，最大的 logit 属于词元 {logit_argmax}：{is_self}。共享时表和输出头共 {tied_params} "
            "个参数，不共享时 {untied_params} 个：共享省下 {saved} 个。词表扩大到 {bigger_vocab} 时，共享为 "
            "{bigger_tied} 个，不共享为 {bigger_untied} 个。"
        ),
        "is_self": ("正是探针自身", "不是探针自身：一个不比探针短的行胜出"),
        "neighbors": (
            "按余弦，词元 {probe} 的近邻：{cos_neighbors}。按点积：{dot_neighbors}。两个列表{differ}。点积把每一行的"
            "长度乘了进去，余弦把长度除掉了。{stretched}"
        ),
        "stretched": (
            "把词元 {stretch_target} 的行拉长 ×{stretch_factor} 就能看出来：余弦列表变为 {cos_after_stretch}，"
            "点积列表变为 {dot_after_stretch}。",
            "把词元 {stretch_target} 的行拉长 ×{stretch_factor} 后，两个列表都没有变：余弦仍是 {cos_after_stretch}，"
            "点积仍是 {dot_after_stretch}。",
        ),
        "differ": ("不同", "相同"),
        "scale": (
            "把查到的向量乘以 √D = √{dim}（Vaswani 等 2017，第 3.4 节）会让它变长：rms 从 {rms_plain} 变为 "
            "{rms_scaled}，比值为 {rms_ratio}。方向不变：词元 {probe} 与 {other} 之间的余弦{unchanged}。"
        ),
        "unchanged": ("缩放前后相同", "变化超出了舍入误差"),
        "captions": {
            "projection": "探针、它的余弦近邻与点积近邻以及随机样本的二维投影（PCA）。二维距离只是 D 维距离的一个侧面。",
            "norms": "行长度（范数）的分布与最长的几行。",
            "cost": "得到同一个向量的两条路上每个词元读取的表元素个数（对数刻度）：查表读一行、不做乘法，独热乘积读所有行、每个元素乘一次。",
            "params": "嵌入表与输出头的参数量：共享与不共享，在当前词表与更大的词表下。",
            "stretch": "拉长一行之前与之后的余弦列表和点积列表（红色：被拉长的行）。",
            "scale": "乘以 √D 之前与之后：长度变大，与探针的余弦不变。",
        },
        "table_header": ("键", "测量值"),
        "figure_left_out": "此图从略：{reason}",
        "note": "注",
        "run": ("由 embedlab {version} 于 {date}（UTC）生成。命令：{command}", "由 embedlab {version} 于 {date}（UTC）生成。"),
        "alt": {
            "projection": "用 {method} 投影到二维的 {n} 行的散点图。轴 1 从 {x0} 到 {x1}，轴 2 从 {y0} 到 {y1}。探针 {probe} 位于 {at}。"
                          "{groups}。",
            "group": "{name}（{n} 个）：{items}",
            "sample": "随机样本 {n} 个",
            "groups": {"cosine": "余弦近邻", "dot": "点积近邻", "both": "同在两个列表中的近邻", "chosen": "选定的行"},
            "norms": "{n} 行范数的直方图：从 {low} 到 {high} 共 {bins} 个区间，行数取对数刻度。最多的区间（{a}–{b}）有 {peak} "
                     "行。最长的 {top} 行：{longest}。",
            "cost": "柱状图（对数刻度）：用查表得到探针的向量读取 {lookup_read} 个表元素（一行，D = {D}），乘法 {lookup} 次；"
                    "用独热乘积读取 {one_hot} 个元素（V × D = {V} × {D}），乘法也是 {one_hot} 次。两个向量的最大差为 {diff}。",
            "params": "嵌入表与输出头参数量的柱状图：V = {V} 时共享 {tied} 个、不共享 {untied} 个；V = {bigger_V} 时共享 "
                      "{bigger_tied} 个、不共享 {bigger_untied} 个。",
            "stretch": "与探针 {probe} 最近的 {k} 行的四个柱状图（由近到远）。拉长前的余弦：{cos_before}。拉长前的点积："
                       "{dot_before}。把 {target} 的行拉长 ×{factor} 后的余弦：{cos_after}；点积：{dot_after}。",
            "scale": "左：{n} 行乘以 √D = {factor} 之前 → 之后的长度：{lengths}。右：各行与探针 {probe} 的余弦，之前 → 之后："
                     "{cosines}。",
            "sep": "、",
            "clause_sep": "；",
        },
        "scale_zero": (
            "探针 {probe} 的向量是零向量：乘以 √D = √{dim}（Vaswani 等 2017，第 3.4 节）后仍为零（rms 从 {rms_plain} "
            "变为 {rms_scaled}），零向量没有方向；按本实验的规则，与零向量的余弦为 0.0。"
        ),
        "figures": {
            "projection_pca": "：欧氏方差最大的方向（在 {fitted} 行上拟合）",
            "projection_keeps": "：保留{metric}近邻关系（{settings}）",
            "metric_cosine": "余弦",
            "metric_euclidean": "欧氏距离",
            "labelled_note": "{total} 个点中 {placed} 个有标签，{left} 个未加标签",
            "norms_unplaced": "（另有 {more} 个只作标记：没有放标签的位置）",
            "compress_title": "{table}：向量压缩后保留的近邻（{queries} 个查询，k = {k}）",
            "compress_bytes": "每个词元的字节数，含码本、轴等附带数据（对数刻度）",
            "compress_recall": "recall@{k}（精确前 {k} 个中保留的比例）",
            "compress_cosine": "余弦",
            "compress_dot": "点积",
            "compress_full": "原始表（{bytes} 字节）",
            "compress_rescored": "{method}，前 {shortlist} 个重新打分",
            "cosine_axis": "余弦相似度（无单位）",
            "dot_axis": "点积（表单位的平方）",
            "undrawn": "已安装的字体缺少其字符、无法绘制的词元（以 � 显示）：{tokens}",
            "projection_title": "{table} 表中 {rows} 行的 {method} 投影",
            "projection_axis": "{method} 第 {axis} 轴（任意单位）",
            "projection_note": "二维距离只是 D 维距离的一个侧面",
            "projection_left_out": "{count} 个退化行未参与拟合、未画出（--keep-degenerate 可保留）：{rows}",
            "projection_kept": "{count} 个退化行保留在拟合中（--keep-degenerate）：{rows}",
            "degenerate_zero": "全为 0",
            "degenerate_copy": "id {of} 的副本",
            "degenerate_long": "长度 > {limit}（中位数 + 10 MAD）",
            "group_probe": "探针",
            "group_cosine": "余弦近邻",
            "group_dot": "点积近邻",
            "group_both": "两个列表都有",
            "group_sample": "随机样本",
            "group_chosen": "选定的词元",
            "norms_title": "{table} 表的行范数（{rows} 行），标出最长的 {top} 行",
            "norms_axis": "行范数（L2 长度，表单位）",
            "norms_rows": "每个区间的行数（对数刻度）",
            "norms_bins": "行",
            "norms_longest": "最长的行",
            "stretch_title": "{probe} 的近邻：把 {target}（红色）拉长 ×{factor}，只有点积列表里的名次改变",
            "stretch_title_in": "{table} 中 {probe} 的近邻：把 {target}（红色）拉长 ×{factor}，只有点积列表里的名次改变",
            "cosine_before": "余弦，拉长前",
            "dot_before": "点积，拉长前",
            "cosine_after": "余弦，拉长 ×{factor} 后",
            "dot_after": "点积，拉长 ×{factor} 后",
            "with_norm": "{token}（范数 {norm}）",
            "stretched_row": "被拉长的行",
            "scale_title": "乘以 √D（Vaswani 等 2017，第 3.4 节）：{probe} 附近的行",
            "scale_title_in": "乘以 √D（Vaswani 等 2017，第 3.4 节）：{table} 中 {probe} 附近的行",
            "size_changes": "长度改变",
            "direction_stays": "方向不变",
            "scale_unplaced": "{left} 个点没有放标签的位置",
            "before": "缩放前",
            "after_scale": "乘以 √D = {factor} 后",
            "length_axis": "向量长度（L2，表单位）",
            "after_equals_before": "缩放后 = 缩放前",
            "neighbours": "探针的近邻",
            "cos_before_scale": "缩放前与探针的余弦（无单位）",
            "cos_after_scale": "缩放后与探针的余弦（无单位）",
            "cost_title": "同一个向量，两条路（V = {vocab}，D = {dim}），最大差 {diff}",
            "route_lookup": "查表（一行）",
            "route_one_hot": "独热 × 表（全部 V 行）",
            "cost_axis": "每个词元读取的表元素个数（对数刻度）",
            "cost_bar": "读取 {numbers} 个元素，乘法 {mults} 次",
            "params_title": "权重共享省下 V × D 个参数（D = {dim}）",
            "params_axis": "参数量",
            "tied": "共享（一张表）",
            "untied": "不共享（表 + 输出头）",
            "positions_title": "{table} 的位置表：T_max = {T_max}，D = {D}",
            "no_learned": "{table} 没有学习的位置表，只画出正弦表",
            "positions_offset": "去掉了 {stored} 行的表的第 0–{last} 行：{family} 从第 {offset} 行开始数位置（位置 p 是第 p + {offset} 行）",
            "positions_config": "T_max = {T_max}：config 的 max_position_embeddings",
            "positions_default": "T_max = {T_max}：默认值（config 没有给出 T_max）",
            "positions_drawn": "在 {T_max} 个位置中只测量并画出前 {drawn} 个",
            "positions_step": "热图每 {step} 个位置显示一个",
            "position_map": "位置 p 与 q 的余弦，{name}",
            "position_p": "位置 p（从 0 起）",
            "position_q": "位置 q（从 0 起）",
            "learned": "学习的表",
            "learned_of": "学习的表（{table}）",
            "sinusoidal": "正弦表",
            "adjacent_title": "相邻位置：p 与 p + 1 的余弦",
            "offset_title": "p 与 p + k 的平均余弦",
            "offset_axis": "偏移 k（位置数，对数刻度）",
            "mean_cosine_axis": "平均余弦相似度（无单位）",
            "bands_title": "正弦位置编码的波长带",
            "bands_strip": "每对 sin/cos 一条带：D 减半，范围不变，带数减半",
            "bands_curve": "波长 = 2π · base^(2k / D)，base = {base}",
            "band_count": "D = {width}：{bands} 条带",
            "wavelength_axis": "波长（位置数，对数刻度）",
            "model_width": "模型宽度",
            "pair_axis": "对序号 2k / D（无单位）",
        },
    },
}

LANGUAGES = tuple(WORDS)


# The projector page's words (``report.projector``), kept apart from the report's prose above. A
# ``{field}`` is filled in by the page writer; ``columns`` heads the neighbour tables; ``kept``
# says, per method, what the picture keeps.
PROJECTOR_WORDS: dict[str, dict[str, object]] = {
    "ko": {
        "title": "{table}: 토큰 {n}개의 {dims}차원 투영({method})",
        "summary": "V = {V}, D = {D}. 점: {points}. 가까운 토큰: 목록마다 k = {k}개, V개 행 전체에서 정확히 찾았다.",
        "points_sampled": "탐침 {probe}, 그 이웃, 무작위 표본(시드 {seed})",
        "points_tokens": "주어진 토큰",
        "kept": {"pca": "PCA는 분산이 가장 큰 방향을 지킨다.", "tsne": "t-SNE는 토큰마다 {metric} 이웃 관계를 지킨다.",
                 "umap": "UMAP은 토큰마다 {metric} 이웃 관계를 지킨다."},
        "view_note": "{kept} 그림 속 거리는 D차원 거리의 한 단면일 뿐이고, 이웃 목록은 D차원 전체에서 쟀다.",
        "search": "토큰 찾기",
        "search_hint": "토큰의 일부나 id:N을 입력한다. Enter를 누르면 첫 결과를 고른다.",
        "matches": "일치하는 점 {count}개",
        "no_match": "이 투영에는 일치하는 토큰이 없다.",
        "color_by": "색",
        "color_group": "이웃 구분",
        "color_norm": "행 길이",
        "legend": {"selected": "고른 점", "cosine": "코사인만", "dot": "내적만", "both": "코사인과 내적 모두",
                   "other": "그 밖", "chosen": "주어진 토큰"},
        "click_hint": "점을 누르면 가까운 토큰 목록이 나온다.",
        "labels_all": "모든 점에 토큰을 적되, 다른 이름표와 겹칠 이름표는 빼고 마우스를 올리면 보이게 했다.",
        "labels_some": "이름표는 고른 점과 그 이웃, 검색 결과(처음 {matches}개)에만, 서로 겹치지 않는 것만 붙는다. 다른 점은 마우스를 올리면 토큰이 보인다.",
        "selected": "고른 토큰",
        "cosine": "코사인으로 가까운 토큰",
        "dot": "내적으로 가까운 토큰",
        "columns": ("순위", "토큰", "id", "점수", "길이"),
        "not_shown": "이 투영에 없는 토큰",
        "absent_hint": "회색 줄은 이 투영에 없는 토큰이다. 나머지 줄은 누르면 고를 수 있다.",
        "length": "길이",
        "reset": "처음 보기로",
        "no_webgl": "이 브라우저는 3차원 보기에 필요한 WebGL을 그리지 못한다. --dims 2로 다시 만들면 된다.",
        "notes": "참고",
    },
    "en": {
        "title": "{table}: {n} tokens in {dims}-D ({method})",
        "summary": "V = {V}, D = {D}. Points: {points}. Nearest tokens: k = {k} per list, exact, over all V rows.",
        "points_sampled": "the probe {probe}, its neighbours and a random sample (seed {seed})",
        "points_tokens": "the tokens given",
        "kept": {"pca": "PCA keeps the directions of largest variance.",
                 "tsne": "t-SNE keeps each token's {metric} neighbourhood.",
                 "umap": "UMAP keeps each token's {metric} neighbourhood."},
        "view_note": "{kept} Distances in the picture are only a view of those in D dimensions; the neighbour lists "
                     "are measured in all D.",
        "search": "Search a token",
        "search_hint": "Type part of a token, or id:N. Enter selects the first match.",
        "matches": "Matches: {count}",
        "no_match": "No token in this projection matches.",
        "color_by": "Colour by",
        "color_group": "neighbour group",
        "color_norm": "row length",
        "legend": {"selected": "selected", "cosine": "cosine only", "dot": "dot only", "both": "cosine and dot",
                   "other": "other", "chosen": "token given"},
        "click_hint": "Click a point to list its nearest tokens.",
        "labels_all": "Every point is labelled with its token where the label touches no other label; hover any other point for its token.",
        "labels_some": "Labels show the selected point, its nearest tokens and the search matches (the first {matches}), each where it touches no other label; hover any other point for its token.",
        "selected": "Selected token",
        "cosine": "Nearest by cosine",
        "dot": "Nearest by dot product",
        "columns": ("rank", "token", "id", "score", "length"),
        "not_shown": "not in this projection",
        "absent_hint": "Grey rows are not in this projection; click another row to select it.",
        "length": "length",
        "reset": "Reset view",
        "no_webgl": "This browser cannot draw WebGL, which the 3-D view needs: write the page again with --dims 2.",
        "notes": "Notes",
    },
    "ja": {
        "title": "{table}：トークン {n} 個の {dims} 次元投影（{method}）",
        "summary": "V = {V}、D = {D}。点：{points}。近いトークン：各リスト k = {k} 個、V 行すべてから厳密に求めた。",
        "points_sampled": "プローブ {probe}、その近傍、ランダムな標本（シード {seed}）",
        "points_tokens": "指定したトークン",
        "kept": {"pca": "PCA は分散が最大の方向を保つ。", "tsne": "t-SNE は各トークンの{metric}の近傍を保つ。",
                 "umap": "UMAP は各トークンの{metric}の近傍を保つ。"},
        "view_note": "{kept}図の距離は D 次元の距離の一つの見え方にすぎず、近傍リストは D 次元すべてで測った。",
        "search": "トークンを検索",
        "search_hint": "トークンの一部か id:N を入力。Enter で最初の結果を選ぶ。",
        "matches": "一致する点 {count} 個",
        "no_match": "この投影に一致するトークンはない。",
        "color_by": "色分け",
        "color_group": "近傍の種類",
        "color_norm": "行の長さ",
        "legend": {"selected": "選択中", "cosine": "コサインのみ", "dot": "内積のみ", "both": "コサインと内積の両方",
                   "other": "その他", "chosen": "指定したトークン"},
        "click_hint": "点をクリックすると近いトークンの一覧が出る。",
        "labels_all": "すべての点にトークンを付けたが、ほかのラベルと重なるものは省き、マウスを重ねると出る。",
        "labels_some": "ラベルは選んだ点とその近傍、検索結果（最初の {matches} 件）だけに、ほかのラベルと重ならないものだけ付く。ほかの点はマウスを重ねるとトークンが出る。",
        "selected": "選択したトークン",
        "cosine": "コサインで近いトークン",
        "dot": "内積で近いトークン",
        "columns": ("順位", "トークン", "id", "スコア", "長さ"),
        "not_shown": "この投影にはない",
        "absent_hint": "灰色の行はこの投影にないトークン。ほかの行はクリックすると選べる。",
        "length": "長さ",
        "reset": "表示を戻す",
        "no_webgl": "このブラウザは 3 次元表示に必要な WebGL を描けない。--dims 2 で作り直してほしい。",
        "notes": "注",
    },
    "zh": {
        "title": "{table}：{n} 个词元的 {dims} 维投影（{method}）",
        "summary": "V = {V}，D = {D}。点：{points}。最近词元：每个列表 k = {k} 个，在全部 V 行中精确求得。",
        "points_sampled": "探针 {probe}、它的近邻与随机样本（种子 {seed}）",
        "points_tokens": "给定的词元",
        "kept": {"pca": "PCA 保留方差最大的方向。", "tsne": "t-SNE 保留每个词元的{metric}近邻关系。", "umap": "UMAP 保留每个词元的{metric}近邻关系。"},
        "view_note": "{kept}图中的距离只是 D 维距离的一个侧面；近邻列表是在全部 D 维中测得的。",
        "search": "搜索词元",
        "search_hint": "输入词元的一部分或 id:N；按 Enter 选中第一个结果。",
        "matches": "{count} 个匹配的点",
        "no_match": "此投影中没有匹配的词元。",
        "color_by": "着色",
        "color_group": "近邻类别",
        "color_norm": "行长度",
        "legend": {"selected": "选中", "cosine": "仅余弦", "dot": "仅点积", "both": "余弦与点积",
                   "other": "其他", "chosen": "给定词元"},
        "click_hint": "点击一个点，列出它的最近词元。",
        "labels_all": "每个点都标出词元，但会与其他标签重叠的省去，悬停即可看到。",
        "labels_some": "只给选中的点、它的近邻和搜索结果（前 {matches} 个）中互不重叠的加标签；其他点悬停即可看到词元。",
        "selected": "选中的词元",
        "cosine": "按余弦最近",
        "dot": "按点积最近",
        "columns": ("名次", "词元", "id", "分数", "长度"),
        "not_shown": "不在此投影中",
        "absent_hint": "灰色的行不在此投影中；点击其余的行可选中它。",
        "length": "长度",
        "reset": "重置视图",
        "no_webgl": "此浏览器无法绘制 3 维视图所需的 WebGL：请用 --dims 2 重新生成。",
        "notes": "注",
    },
}


# The audit's words (``embedlab audit``: ``report.audit`` writes its Markdown, ``report.views`` its terminal
# summary in English, ``report.plots.audit_figure`` its figure). ``findings`` says what one finding is, with its
# count; ``advice`` what to do about it; both are keyed by ``measure.audit.Finding.code``.
AUDIT_WORDS: dict[str, dict[str, object]] = {
    "en": {
        "title": "Audit of {table}: does the vocabulary agree with the table and the head?",
        "intro": "{table}: token table V = {V} rows x D = {D} ({dtype}); {tie}. Tokenizer: {tokenizer}.",
        "tie": {"tied": "the output head is the token table (tied)",
                "untied": "the output head is a table of its own, {head_rows} rows ({head})",
                "unknown": "no output head of its own, and the source does not say the head is the token table"},
        "no_tokenizer": "none",
        "verdict": "fatal: {fatal}; warnings: {warning}; notes: {note}.",
        "clean": "Nothing wrong found.",
        "clean_partial": "Nothing wrong found in the parts that ran.",
        "skipped_summary": "Skipped: {parts}.", "separator": ", ",
        "resize_besides": ", besides those a warning names",
        "severity": {"fatal": "FATAL", "warning": "WARNING", "note": "NOTE"},
        "parts": {"input": "token table", "head": "output head"},
        "findings": {
            "ids_past_table": "token ids at or past the table's {rows} rows: {count}",
            "ids_past_head": "token ids at or past the output head's {head_rows} rows: {count}",
            "nonfinite_rows": "rows holding NaN or infinity ({part}): {count}",
            "zero_token_rows": "all-zero rows that tokens map to ({part}): {count}",
            "duplicate_rows": "rows that are exact copies of another row ({part}): {count}",
            "config_vocab_size": "config vocab_size {vocab_size} and the table's {rows} rows differ by {count}",
            "head_rows": "the output head's {head_rows} rows and the table's {rows} differ by {count}",
            "resize_drops_tokens": "rows of tokens that resize_token_embeddings(len(tokenizer) = {length}) would "
                                   "drop: {count}",
            "resize_drops_trained": "rows past len(tokenizer) = {length} that look trained, which "
                                    "resize_token_embeddings(len(tokenizer)) would drop: {count}",
            "undertrained": "tokens that look under-trained ({part}): {count}",
            "reachable_unused": "tokens known to be unused that a text can still produce: {count}",
            "unreachable": "tokens that encoding their own string does not give back (not special): {count}",
            "holes": "ids below the largest id with no token (holes): {count}",
            "padding_rows": "rows of the table that no token maps to: {count}",
            "resize_changes": "rows resize_token_embeddings(len(tokenizer) = {length}) would drop or add{besides}: "
                              "{count}",
        },
        "advice": {
            "ids_past_table": "a lookup of these ids fails: the tokenizer and the weights do not belong together, "
                              "or the table must grow to len(tokenizer) and the new rows be trained",
            "ids_past_head": "the model can never predict these ids: grow the head with the table",
            "nonfinite_rows": "every logit and every sum these rows enter is NaN: replace them (with the mean of the "
                              "trained rows, say) before using or fine-tuning the model",
            "zero_token_rows": "these tokens have no direction and score 0 against every hidden state: check the "
                               "conversion, or initialise and train them",
            "duplicate_rows": "the model cannot tell these tokens apart: copies come from a conversion, or from "
                              "rows never trained and set to one value",
            "config_vocab_size": "transformers builds the table from vocab_size: make config.json agree with the "
                                 "weights",
            "head_rows": "ids the head has no row for can never be predicted: make the two tables agree",
            "resize_drops_tokens": "len(tokenizer) counts tokens, not ids: with holes it is less than the largest "
                                   "id + 1; resize to at least that",
            "resize_drops_trained": "do not resize down to len(tokenizer): keep the table's rows (pad_to_multiple_of) "
                                    "or find out what these rows are first",
            "undertrained": "keep them out of prompts and sampling (mask their logits), or check each with the "
                            "model (does it repeat the token?); re-initialise their rows before fine-tuning on them",
            "reachable_unused": "their rows never trained: mask their logits and keep them out of data, or "
                                "initialise and train them before use (Llama 3's reserved tokens turned NaN in "
                                "fine-tuning)",
            "unreachable": "the model sees them only from another tokenizer: WordPiece continuations and control "
                           "strings are expected, others deserve a look",
            "holes": "their rows are never looked up; len(tokenizer) counts tokens, not ids",
            "padding_rows": "usually padding to a multiple of 64 or 128, harmless; they are reference rows of the "
                            "under-trained indicators",
            "resize_changes": "rows past len(tokenizer) go; rows added start from the old rows' mean and covariance",
        },
        "todo": "What to do",
        "headings": {"summary": "Summary", "accounting": "Row accounting", "reachability": "Reachability",
                     "degenerate": "Degenerate rows", "undertrained": "Under-trained tokens",
                     "skipped": "Skipped", "notes": "Notes"},
        "accounting": {"vocab_size": "config vocab_size", "table_rows": "token table rows",
                       "head_rows": "output head rows", "tokenizer_length": "len(tokenizer): base vocabulary and "
                                                                             "added tokens",
                       "base_vocabulary": "base vocabulary", "id_span": "largest id + 1", "holes": "holes",
                       "past_table": "ids past the table", "past_head": "ids past the head",
                       "padding": "rows no token maps to", "resize": "resize_token_embeddings(len(tokenizer))",
                       "resize_none": "changes nothing", "resize_drop": "drops rows {first} to {last}",
                       "resize_add": "adds {count} rows", "trained": "of which look trained",
                       "listed": "special and added tokens", "tied_head": "tied: the token table",
                       "none": "none", "unknown": "not known"},
        "columns": {"counts": ("count", "value"), "listed": ("id", "token", "special", "added", "row"),
                    "categories": ("category", "tokens", "what it means"),
                    "unreachable": ("id", "token", "category", "decoded", "encodes to"),
                    "degenerate": ("table", "all zero", "NaN or infinity", "copies (groups)"),
                    "candidates": ("id", "token", "category", "reference", "main", "cosine", "L2")},
        "yes": "yes", "no": "no",
        "categories": {"OK": "reachable: encoding gives the id back",
                       "OK_SPECIAL": "reachable special token",
                       "UNREACHABLE_SPECIAL": "not given back, written like a control token ([BOS], </s>)",
                       "UNDECODEABLE": "not given back, a partial UTF-8 byte sequence",
                       "UNREACHABLE_SINGLE_TOKEN": "encodes to one other token",
                       "UNREACHABLE_MULTI_TOKEN": "encodes to several tokens"},
        "reachability_intro": "Every token decoded alone and its string encoded again, sorted as Magikarp's code "
                              "does (Land & Bartolo 2024).",
        "more": "… and {count} more (--json lists all)",
        "indicators": {"cosine_distance_without_first_pc": "cosine distance to the mean of the reference rows, "
                                                           "first principal component removed",
                       "cosine_distance_without_mean": "the same, the mean of all rows removed",
                       "cosine_distance": "cosine distance to the mean of the reference rows",
                       "l2_distance": "L2 distance to the mean of the reference rows",
                       "input_l2_norm": "L2 norm of each row"},
        "undertrained_intro": "Indicator (Land & Bartolo 2024): {indicator}, measured on the {part}. "
                              "Reference rows: {reference} ({by}). Threshold: percentile {percentile} of the main "
                              "indicator over {size} {population}: {threshold}; candidates: {count}.",
        "trained_padding": "Rows no token maps to that look trained, left out of the reference: {count} ({ids}).",
        "trained_rule": "a row looks trained when it is finite, not all zero, not an exact copy of another row (rows "
                        "never trained are often one shared value), and its L2 length is within a factor {factor} of "
                        "the median length of the rows tokens map to, tokens known to be unused left out ({ranges}; "
                        "the median, unlike a low percentile, stays put when some tokens are under-trained), in the "
                        "table or, untied, in the head",
        "rule_range": "{part}: {low} to {high}", "rule_none": "{part}: no row to take a median of",
        "populations": {"reachable": "reachable tokens (OK; candidates among OK and OK_SPECIAL)",
                        "typed_normal": "tokens typed normal (no tokenizer to run; candidates among normal and "
                                        "control)",
                        "with_token": "rows with a token, specials left out (no tokenizer to run)",
                        "every_row": "rows, all of them (no vocabulary)"},
        "ids": "ids",
        "reference_by": {"padding": "rows no token maps to", "named": "tokens named like {like}",
                         "unused_type": "tokens typed unused", "given": "ids given"},
        "skipped_parts": {"accounting": "row accounting against the tokenizer", "reachability": "reachability",
                          "undertrained": "under-trained tokens"},
        "figure": {"title": "{table}: under-trained tokens ({part})",
                   "x": "token id", "y": "{indicator}",
                   "threshold": "threshold: percentile {percentile} = {value}",
                   "tokens": "other rows (only reachable tokens can be candidates)", "reference": "reference rows ({count})",
                   "candidates": "candidates ({count})", "lowest": "lowest {count}: id, token, value",
                   "not_drawn": "rows not drawn, having no indicator (NaN or infinity in the row, or no row in the "
                                "table measured): {count} ({ids})"},
        "more_listed": "and {count} more candidates",
    },
    "ko": {
        "title": "{table} 점검: 어휘는 표와 출력 머리와 맞는가",
        "intro": "{table}: 토큰 표 V = {V}행 × D = {D} ({dtype}); {tie}. 토크나이저: {tokenizer}.",
        "tie": {"tied": "출력 머리는 토큰 표 자체다(가중치 묶기)",
                "untied": "출력 머리는 따로 있는 표다, {head_rows}행 ({head})",
                "unknown": "따로 된 출력 머리가 없고, 머리가 토큰 표라는 말도 없다"},
        "no_tokenizer": "없음",
        "verdict": "치명: {fatal}; 경고: {warning}; 참고: {note}.",
        "clean": "잘못된 것을 찾지 못했다.",
        "clean_partial": "실행한 부분에서는 잘못된 것을 찾지 못했다.",
        "skipped_summary": "건너뜀: {parts}.", "separator": ", ",
        "resize_besides": ", 경고에 나온 행 말고",
        "severity": {"fatal": "치명", "warning": "경고", "note": "참고"},
        "parts": {"input": "토큰 표", "head": "출력 머리"},
        "findings": {
            "ids_past_table": "표의 {rows}행을 넘어서는 토큰 id: {count}개",
            "ids_past_head": "출력 머리의 {head_rows}행을 넘어서는 토큰 id: {count}개",
            "nonfinite_rows": "NaN이나 무한대가 든 행({part}): {count}개",
            "zero_token_rows": "토큰이 가리키는 영벡터 행({part}): {count}개",
            "duplicate_rows": "다른 행과 똑같은 행({part}): {count}개",
            "config_vocab_size": "config의 vocab_size {vocab_size}와 표의 {rows}행이 {count}만큼 다르다",
            "head_rows": "출력 머리의 {head_rows}행과 표의 {rows}행이 {count}만큼 다르다",
            "resize_drops_tokens": "resize_token_embeddings(len(tokenizer) = {length})가 버릴 토큰 행: {count}개",
            "resize_drops_trained": "len(tokenizer) = {length} 너머에서 학습된 듯한 행, "
                                    "resize_token_embeddings(len(tokenizer))가 버린다: {count}개",
            "undertrained": "덜 학습된 듯한 토큰({part}): {count}개",
            "reachable_unused": "쓰이지 않는다고 알려졌는데도 텍스트가 만들어 낼 수 있는 토큰: {count}개",
            "unreachable": "자기 문자열을 인코딩해도 돌아오지 않는 토큰(특수 토큰 제외): {count}개",
            "holes": "가장 큰 id 아래에서 토큰이 없는 id(구멍): {count}개",
            "padding_rows": "어느 토큰도 가리키지 않는 표의 행: {count}개",
            "resize_changes": "resize_token_embeddings(len(tokenizer) = {length})가 버리거나 더할 행{besides}: "
                              "{count}개",
        },
        "advice": {
            "ids_past_table": "이 id를 조회하면 실패한다: 토크나이저와 가중치가 짝이 아니거나, 표를 len(tokenizer)까지 "
                              "늘리고 새 행을 학습해야 한다",
            "ids_past_head": "모델은 이 id를 결코 예측하지 못한다: 머리도 표와 함께 늘려야 한다",
            "nonfinite_rows": "이 행이 들어가는 로짓과 합은 모두 NaN이 된다: 쓰거나 미세 조정하기 전에 (예컨대 학습된 행의 "
                              "평균으로) 바꿔야 한다",
            "zero_token_rows": "이 토큰에는 방향이 없어 어떤 은닉 상태와도 점수가 0이다: 변환을 확인하거나 초기화해 "
                               "학습해야 한다",
            "duplicate_rows": "모델은 이 토큰들을 구별하지 못한다: 복사본은 변환에서, 또는 학습되지 않고 한 값으로 채운 "
                              "행에서 나온다",
            "config_vocab_size": "transformers는 vocab_size로 표를 만든다: config.json을 가중치에 맞춰야 한다",
            "head_rows": "머리에 행이 없는 id는 예측될 수 없다: 두 표를 맞춰야 한다",
            "resize_drops_tokens": "len(tokenizer)는 id가 아니라 토큰을 센다: 구멍이 있으면 가장 큰 id + 1보다 작다. "
                                   "적어도 그만큼으로 늘려야 한다",
            "resize_drops_trained": "len(tokenizer)로 줄이지 말 것: 표의 행을 유지하거나(pad_to_multiple_of) 이 행이 "
                                    "무엇인지 먼저 알아봐야 한다",
            "undertrained": "프롬프트와 샘플링에서 빼거나(로짓 가리기) 모델로 하나씩 확인한다(토큰을 되풀이하는가?); "
                            "이 토큰으로 미세 조정하기 전에 행을 다시 초기화한다",
            "reachable_unused": "이 행은 학습된 적이 없다: 로짓을 가리고 데이터에서 빼거나, 쓰기 전에 초기화해 학습한다"
                                "(Llama 3의 예약 토큰은 미세 조정에서 NaN을 냈다)",
            "unreachable": "모델은 다른 토크나이저를 거쳐서만 이 토큰을 본다: WordPiece 이음 조각과 제어 문자열은 "
                           "정상이고, 나머지는 살펴볼 만하다",
            "holes": "이 id의 행은 조회되지 않는다; len(tokenizer)는 id가 아니라 토큰을 센다",
            "padding_rows": "보통 64나 128의 배수로 채운 것이라 해롭지 않다; 덜 학습된 토큰 지표의 기준 행이 된다",
            "resize_changes": "len(tokenizer) 너머의 행은 버려지고, 더해지는 행은 기존 행의 평균과 공분산에서 시작한다",
        },
        "todo": "할 일",
        "headings": {"summary": "요약", "accounting": "행 대조", "reachability": "도달 가능성",
                     "degenerate": "퇴화한 행", "undertrained": "덜 학습된 토큰", "skipped": "건너뛴 부분",
                     "notes": "참고"},
        "accounting": {"vocab_size": "config의 vocab_size", "table_rows": "토큰 표의 행",
                       "head_rows": "출력 머리의 행", "tokenizer_length": "len(tokenizer): 기본 어휘와 추가 토큰",
                       "base_vocabulary": "기본 어휘", "id_span": "가장 큰 id + 1", "holes": "구멍",
                       "past_table": "표를 넘어서는 id", "past_head": "머리를 넘어서는 id",
                       "padding": "토큰이 가리키지 않는 행", "resize": "resize_token_embeddings(len(tokenizer))",
                       "resize_none": "바뀌는 것이 없다", "resize_drop": "행 {first}부터 {last}까지 버린다",
                       "resize_add": "행 {count}개를 더한다", "trained": "그중 학습된 듯한 행",
                       "listed": "특수 토큰과 추가 토큰", "tied_head": "묶임: 토큰 표",
                       "none": "없음", "unknown": "알 수 없음"},
        "columns": {"counts": ("항목", "값"), "listed": ("id", "토큰", "특수", "추가", "행"),
                    "categories": ("범주", "토큰 수", "뜻"),
                    "unreachable": ("id", "토큰", "범주", "디코딩", "다시 인코딩하면"),
                    "degenerate": ("표", "영벡터", "NaN이나 무한대", "복사본(묶음)"),
                    "candidates": ("id", "토큰", "범주", "기준", "주 지표", "코사인", "L2")},
        "yes": "예", "no": "아니오",
        "categories": {"OK": "도달 가능: 인코딩하면 id가 돌아온다",
                       "OK_SPECIAL": "도달 가능한 특수 토큰",
                       "UNREACHABLE_SPECIAL": "돌아오지 않고, 제어 토큰처럼 생겼다([BOS], </s>)",
                       "UNDECODEABLE": "돌아오지 않고, UTF-8 바이트열의 일부다",
                       "UNREACHABLE_SINGLE_TOKEN": "다른 토큰 하나로 인코딩된다",
                       "UNREACHABLE_MULTI_TOKEN": "여러 토큰으로 인코딩된다"},
        "reachability_intro": "토큰마다 혼자 디코딩하고 그 문자열을 다시 인코딩해, Magikarp 코드처럼 나눴다"
                              "(Land & Bartolo 2024).",
        "more": "… 외 {count}개 (--json이 모두 보여 준다)",
        "indicators": {"cosine_distance_without_first_pc": "첫 주성분을 뺀 뒤 기준 행 평균까지의 코사인 거리",
                       "cosine_distance_without_mean": "같은 것, 모든 행의 평균을 뺀 뒤",
                       "cosine_distance": "기준 행 평균까지의 코사인 거리",
                       "l2_distance": "기준 행 평균까지의 L2 거리",
                       "input_l2_norm": "각 행의 L2 노름"},
        "trained_padding": "토큰이 가리키지 않지만 학습된 듯한 행은 기준에서 뺐다: {count}개 ({ids}).",
        "trained_rule": "유한하고, 영벡터가 아니고, 다른 행의 복사본이 아니며(학습되지 않은 행은 흔히 한 값으로 "
                        "채워진다), L2 길이가 토큰이 가리키는 행(쓰이지 않는다고 알려진 토큰 제외) 길이의 중앙값에서 "
                        "{factor}배 안쪽이면 학습된 듯한 행이다({ranges}; 중앙값은 낮은 백분위수와 달리 덜 학습된 토큰이 "
                        "좀 있어도 움직이지 않는다). 표에서, 또는 묶이지 않았으면 머리에서 본다",
        "rule_range": "{part}: {low}부터 {high}까지", "rule_none": "{part}: 중앙값을 낼 행이 없다",
        "undertrained_intro": "지표(Land & Bartolo 2024): {indicator}, {part}에서 쟀다. 기준 행: {reference}개"
                              "({by}). 문턱: {population} {size}개에서 주 지표의 {percentile} 백분위수 = {threshold}; "
                              "후보: {count}개.",
        "populations": {"reachable": "도달 가능한 토큰(OK; 후보는 OK와 OK_SPECIAL 가운데)",
                        "typed_normal": "normal로 표시된 토큰(돌릴 토크나이저 없음; 후보는 normal과 control 가운데)",
                        "with_token": "토큰이 있는 행, 특수 토큰 제외(돌릴 토크나이저 없음)",
                        "every_row": "행 전부(어휘 없음)"},
        "ids": "id",
        "reference_by": {"padding": "토큰이 가리키지 않는 행", "named": "{like} 같은 이름의 토큰",
                         "unused_type": "unused로 표시된 토큰", "given": "주어진 id"},
        "skipped_parts": {"accounting": "토크나이저와의 행 대조", "reachability": "도달 가능성",
                          "undertrained": "덜 학습된 토큰"},
        "figure": {"title": "{table}: 덜 학습된 토큰 ({part})",
                   "x": "토큰 id", "y": "{indicator}",
                   "threshold": "문턱: {percentile} 백분위수 = {value}",
                   "tokens": "그 밖의 행 (후보는 도달 가능한 토큰만)", "reference": "기준 행 ({count}개)",
                   "candidates": "후보 ({count}개)", "lowest": "가장 낮은 {count}개: id, 토큰, 값",
                   "not_drawn": "지표가 없어 그리지 않은 행(행에 NaN이나 무한대가 있거나, 잰 표에 행이 없다): "
                                "{count}개 ({ids})"},
        "more_listed": "후보 {count}개 더",
    },
    "ja": {
        "title": "{table} の点検：語彙は表と出力ヘッドに合っているか",
        "intro": "{table}：トークン表 V = {V} 行 × D = {D}（{dtype}）；{tie}。トークナイザー：{tokenizer}。",
        "tie": {"tied": "出力ヘッドはトークン表そのもの（重み共有）",
                "untied": "出力ヘッドは別の表、{head_rows} 行（{head}）",
                "unknown": "別の出力ヘッドはなく、ヘッドがトークン表だという記述もない"},
        "no_tokenizer": "なし",
        "verdict": "致命：{fatal}；警告：{warning}；注：{note}。",
        "clean": "問題は見つからなかった。",
        "clean_partial": "実行した部分では問題は見つからなかった。",
        "skipped_summary": "省いた部分：{parts}。", "separator": "、",
        "resize_besides": "、警告に挙げた行のほか",
        "severity": {"fatal": "致命", "warning": "警告", "note": "注"},
        "parts": {"input": "トークン表", "head": "出力ヘッド"},
        "findings": {
            "ids_past_table": "表の {rows} 行を超えるトークン id：{count} 個",
            "ids_past_head": "出力ヘッドの {head_rows} 行を超えるトークン id：{count} 個",
            "nonfinite_rows": "NaN か無限大を含む行（{part}）：{count} 個",
            "zero_token_rows": "トークンが指すゼロベクトルの行（{part}）：{count} 個",
            "duplicate_rows": "ほかの行とまったく同じ行（{part}）：{count} 個",
            "config_vocab_size": "config の vocab_size {vocab_size} と表の {rows} 行が {count} 違う",
            "head_rows": "出力ヘッドの {head_rows} 行と表の {rows} 行が {count} 違う",
            "resize_drops_tokens": "resize_token_embeddings(len(tokenizer) = {length}) が捨てるトークンの行：{count} 個",
            "resize_drops_trained": "len(tokenizer) = {length} より先で学習済みに見える行、"
                                    "resize_token_embeddings(len(tokenizer)) が捨てる：{count} 個",
            "undertrained": "学習不足に見えるトークン（{part}）：{count} 個",
            "reachable_unused": "未使用と分かっているのにテキストから生じうるトークン：{count} 個",
            "unreachable": "自分の文字列をエンコードしても戻らないトークン（特殊トークンを除く）：{count} 個",
            "holes": "最大の id より下でトークンのない id（穴）：{count} 個",
            "padding_rows": "どのトークンも指さない表の行：{count} 個",
            "resize_changes": "resize_token_embeddings(len(tokenizer) = {length}) が捨てるか足す行{besides}："
                              "{count} 個",
        },
        "advice": {
            "ids_past_table": "この id を引くと失敗する：トークナイザーと重みが組になっていないか、表を len(tokenizer) "
                              "まで広げて新しい行を学習する必要がある",
            "ids_past_head": "モデルはこの id を決して予測できない：ヘッドも表と一緒に広げる",
            "nonfinite_rows": "この行が入るロジットと和はすべて NaN になる：使う前、微調整の前に（学習済みの行の平均など"
                              "で）置き換える",
            "zero_token_rows": "このトークンには向きがなく、どの隠れ状態ともスコアが 0：変換を確かめるか、初期化して"
                               "学習する",
            "duplicate_rows": "モデルはこれらのトークンを区別できない：コピーは変換から、または学習されず一つの値で埋めた"
                              "行から生じる",
            "config_vocab_size": "transformers は vocab_size から表を作る：config.json を重みに合わせる",
            "head_rows": "ヘッドに行のない id は予測できない：二つの表を合わせる",
            "resize_drops_tokens": "len(tokenizer) は id ではなくトークンを数える：穴があると最大の id + 1 より小さい。"
                                   "少なくともそこまで広げる",
            "resize_drops_trained": "len(tokenizer) まで縮めないこと：表の行を保つ（pad_to_multiple_of）か、まずこの"
                                    "行が何かを確かめる",
            "undertrained": "プロンプトとサンプリングから外す（ロジットを隠す）か、モデルで一つずつ確かめる（トークンを"
                            "繰り返すか）；このトークンで微調整する前に行を初期化し直す",
            "reachable_unused": "この行は学習されていない：ロジットを隠してデータから外すか、使う前に初期化して学習する"
                                "（Llama 3 の予約トークンは微調整で NaN を出した）",
            "unreachable": "モデルはほかのトークナイザーを通してしかこのトークンを見ない：WordPiece の続き片と制御文字列"
                           "は想定どおりで、それ以外は見る価値がある",
            "holes": "この id の行は引かれない；len(tokenizer) は id ではなくトークンを数える",
            "padding_rows": "たいてい 64 か 128 の倍数への詰め物で無害；学習不足の指標の基準行になる",
            "resize_changes": "len(tokenizer) より先の行は捨てられ、足す行は元の行の平均と共分散から始まる",
        },
        "todo": "すること",
        "headings": {"summary": "要約", "accounting": "行の照合", "reachability": "到達可能性",
                     "degenerate": "退化した行", "undertrained": "学習不足のトークン", "skipped": "省いた部分",
                     "notes": "注"},
        "accounting": {"vocab_size": "config の vocab_size", "table_rows": "トークン表の行",
                       "head_rows": "出力ヘッドの行", "tokenizer_length": "len(tokenizer)：基本語彙と追加トークン",
                       "base_vocabulary": "基本語彙", "id_span": "最大の id + 1", "holes": "穴",
                       "past_table": "表を超える id", "past_head": "ヘッドを超える id",
                       "padding": "トークンが指さない行", "resize": "resize_token_embeddings(len(tokenizer))",
                       "resize_none": "何も変わらない", "resize_drop": "行 {first} から {last} を捨てる",
                       "resize_add": "行を {count} 個足す", "trained": "うち学習済みに見える行",
                       "listed": "特殊トークンと追加トークン", "tied_head": "共有：トークン表",
                       "none": "なし", "unknown": "不明"},
        "columns": {"counts": ("項目", "値"), "listed": ("id", "トークン", "特殊", "追加", "行"),
                    "categories": ("区分", "トークン数", "意味"),
                    "unreachable": ("id", "トークン", "区分", "デコード", "再エンコード"),
                    "degenerate": ("表", "ゼロ", "NaN か無限大", "コピー（組）"),
                    "candidates": ("id", "トークン", "区分", "基準", "主指標", "コサイン", "L2")},
        "yes": "はい", "no": "いいえ",
        "categories": {"OK": "到達可能：エンコードすると id が戻る",
                       "OK_SPECIAL": "到達可能な特殊トークン",
                       "UNREACHABLE_SPECIAL": "戻らず、制御トークンのような形（[BOS]、</s>）",
                       "UNDECODEABLE": "戻らず、UTF-8 バイト列の一部",
                       "UNREACHABLE_SINGLE_TOKEN": "別のトークン一つにエンコードされる",
                       "UNREACHABLE_MULTI_TOKEN": "複数のトークンにエンコードされる"},
        "reachability_intro": "トークンごとに単独でデコードし、その文字列を再びエンコードして、Magikarp のコードと同じく"
                              "分けた（Land & Bartolo 2024）。",
        "more": "… ほか {count} 個（--json がすべて示す）",
        "indicators": {"cosine_distance_without_first_pc": "第 1 主成分を除いたうえでの基準行の平均へのコサイン距離",
                       "cosine_distance_without_mean": "同じもの、全行の平均を除いて",
                       "cosine_distance": "基準行の平均へのコサイン距離",
                       "l2_distance": "基準行の平均への L2 距離",
                       "input_l2_norm": "各行の L2 ノルム"},
        "trained_padding": "トークンが指さないが学習済みに見える行は基準から外した：{count} 個（{ids}）。",
        "trained_rule": "有限で、ゼロでなく、ほかの行のコピーでもなく（学習されない行はしばしば一つの値で埋まる）、"
                        "L2 長がトークンの指す行（未使用と分かっているトークンを除く）の長さの中央値から {factor} 倍"
                        "以内なら、学習済みに見える行とする（{ranges}；中央値は低いパーセンタイルと違い、学習不足の"
                        "トークンが少しあっても動かない）。表で、共有されていなければヘッドでも見る",
        "rule_range": "{part}：{low} から {high}", "rule_none": "{part}：中央値をとる行がない",
        "undertrained_intro": "指標（Land & Bartolo 2024）：{indicator}、{part}で測った。基準行：{reference} 個"
                              "（{by}）。閾値：{population} {size} 個の主指標の {percentile} パーセンタイル = {threshold}；"
                              "候補：{count} 個。",
        "populations": {"reachable": "到達可能なトークン（OK；候補は OK と OK_SPECIAL から）",
                        "typed_normal": "normal と型付けされたトークン（動かすトークナイザーなし；候補は normal と "
                                        "control から）",
                        "with_token": "トークンのある行、特殊トークンを除く（動かすトークナイザーなし）",
                        "every_row": "行すべて（語彙なし）"},
        "ids": "id",
        "reference_by": {"padding": "トークンが指さない行", "named": "{like} のような名前のトークン",
                         "unused_type": "unused と型付けされたトークン", "given": "指定された id"},
        "skipped_parts": {"accounting": "トークナイザーとの行の照合", "reachability": "到達可能性",
                          "undertrained": "学習不足のトークン"},
        "figure": {"title": "{table}：学習不足のトークン（{part}）",
                   "x": "トークン id", "y": "{indicator}",
                   "threshold": "閾値：{percentile} パーセンタイル = {value}",
                   "tokens": "その他の行（候補は到達可能なトークンのみ）", "reference": "基準行（{count} 個）",
                   "candidates": "候補（{count} 個）", "lowest": "最も低い {count} 個：id、トークン、値",
                   "not_drawn": "指標がなく描いていない行（行に NaN か無限大がある、または測った表に行がない）："
                                "{count} 個（{ids}）"},
        "more_listed": "ほかに候補 {count} 個",
    },
    "zh": {
        "title": "{table} 检查：词表与嵌入表和输出头一致吗",
        "intro": "{table}：词元表 V = {V} 行 × D = {D}（{dtype}）；{tie}。分词器：{tokenizer}。",
        "tie": {"tied": "输出头就是词元表（权重共享）",
                "untied": "输出头是一张单独的表，{head_rows} 行（{head}）",
                "unknown": "没有单独的输出头，也没有说明输出头就是词元表"},
        "no_tokenizer": "无",
        "verdict": "致命：{fatal}；警告：{warning}；提示：{note}。",
        "clean": "没有发现问题。",
        "clean_partial": "已运行的部分没有发现问题。",
        "skipped_summary": "跳过的部分：{parts}。", "separator": "、",
        "resize_besides": "，警告中已列出的除外",
        "severity": {"fatal": "致命", "warning": "警告", "note": "提示"},
        "parts": {"input": "词元表", "head": "输出头"},
        "findings": {
            "ids_past_table": "超出表的 {rows} 行的词元 id：{count} 个",
            "ids_past_head": "超出输出头的 {head_rows} 行的词元 id：{count} 个",
            "nonfinite_rows": "含 NaN 或无穷大的行（{part}）：{count} 个",
            "zero_token_rows": "词元所指的全零行（{part}）：{count} 个",
            "duplicate_rows": "与另一行完全相同的行（{part}）：{count} 个",
            "config_vocab_size": "config 的 vocab_size {vocab_size} 与表的 {rows} 行相差 {count}",
            "head_rows": "输出头的 {head_rows} 行与表的 {rows} 行相差 {count}",
            "resize_drops_tokens": "resize_token_embeddings(len(tokenizer) = {length}) 会丢掉的词元行：{count} 个",
            "resize_drops_trained": "len(tokenizer) = {length} 之后看似训练过的行，"
                                    "resize_token_embeddings(len(tokenizer)) 会丢掉：{count} 个",
            "undertrained": "看似训练不足的词元（{part}）：{count} 个",
            "reachable_unused": "已知未使用却仍可由文本产生的词元：{count} 个",
            "unreachable": "编码自身字符串也得不回来的词元（不含特殊词元）：{count} 个",
            "holes": "最大 id 以下没有词元的 id（空洞）：{count} 个",
            "padding_rows": "没有词元指向的表行：{count} 个",
            "resize_changes": "resize_token_embeddings(len(tokenizer) = {length}) 会丢掉或增加的行{besides}："
                              "{count} 个",
        },
        "advice": {
            "ids_past_table": "查这些 id 会出错：分词器与权重不配套，或须把表扩到 len(tokenizer) 并训练新行",
            "ids_past_head": "模型永远无法预测这些 id：输出头要随表一起扩",
            "nonfinite_rows": "这些行参与的每个 logit 和求和都是 NaN：使用或微调前先替换（例如用训练过的行的均值）",
            "zero_token_rows": "这些词元没有方向，与任何隐藏状态的得分都是 0：检查转换，或初始化后训练",
            "duplicate_rows": "模型无法区分这些词元：副本来自转换，或来自从未训练、填成同一个值的行",
            "config_vocab_size": "transformers 按 vocab_size 建表：让 config.json 与权重一致",
            "head_rows": "输出头没有行的 id 无法被预测：让两张表一致",
            "resize_drops_tokens": "len(tokenizer) 数的是词元而不是 id：有空洞时它小于最大 id + 1；至少扩到那么大",
            "resize_drops_trained": "不要缩到 len(tokenizer)：保留表的行（pad_to_multiple_of），或先弄清这些行是什么",
            "undertrained": "把它们排除在提示和采样之外（屏蔽其 logit），或逐个用模型检查（它会重复这个词元吗？）；"
                            "在含这些词元的数据上微调前，重新初始化它们的行",
            "reachable_unused": "这些行从未训练：屏蔽其 logit 并把它们排除在数据之外，或在使用前初始化并训练"
                                "（Llama 3 的保留词元曾在微调中产生 NaN）",
            "unreachable": "模型只能经由别的分词器看到它们：WordPiece 续接片段和控制字符串属正常，其余值得一看",
            "holes": "这些 id 的行从不被查到；len(tokenizer) 数的是词元而不是 id",
            "padding_rows": "通常是补齐到 64 或 128 的倍数，无害；它们是训练不足指标的参照行",
            "resize_changes": "len(tokenizer) 之后的行被丢掉，新增的行从旧行的均值和协方差开始",
        },
        "todo": "怎么办",
        "headings": {"summary": "摘要", "accounting": "行的核对", "reachability": "可达性",
                     "degenerate": "退化的行", "undertrained": "训练不足的词元", "skipped": "跳过的部分",
                     "notes": "提示"},
        "accounting": {"vocab_size": "config 的 vocab_size", "table_rows": "词元表的行",
                       "head_rows": "输出头的行", "tokenizer_length": "len(tokenizer)：基本词表加新增词元",
                       "base_vocabulary": "基本词表", "id_span": "最大 id + 1", "holes": "空洞",
                       "past_table": "超出表的 id", "past_head": "超出输出头的 id",
                       "padding": "没有词元指向的行", "resize": "resize_token_embeddings(len(tokenizer))",
                       "resize_none": "什么也不变", "resize_drop": "丢掉第 {first} 到 {last} 行",
                       "resize_add": "增加 {count} 行", "trained": "其中看似训练过的行",
                       "listed": "特殊词元与新增词元", "tied_head": "共享：词元表",
                       "none": "无", "unknown": "未知"},
        "columns": {"counts": ("项目", "值"), "listed": ("id", "词元", "特殊", "新增", "行"),
                    "categories": ("类别", "词元数", "含义"),
                    "unreachable": ("id", "词元", "类别", "解码", "再编码"),
                    "degenerate": ("表", "全零", "NaN 或无穷大", "副本（组）"),
                    "candidates": ("id", "词元", "类别", "参照", "主指标", "余弦", "L2")},
        "yes": "是", "no": "否",
        "categories": {"OK": "可达：编码后得回该 id",
                       "OK_SPECIAL": "可达的特殊词元",
                       "UNREACHABLE_SPECIAL": "得不回来，形如控制词元（[BOS]、</s>）",
                       "UNDECODEABLE": "得不回来，是 UTF-8 字节序列的一部分",
                       "UNREACHABLE_SINGLE_TOKEN": "编码成另一个词元",
                       "UNREACHABLE_MULTI_TOKEN": "编码成多个词元"},
        "reachability_intro": "每个词元单独解码，再把字符串重新编码，按 Magikarp 代码的方式分类（Land & Bartolo 2024）。",
        "more": "… 另有 {count} 个（--json 列出全部）",
        "indicators": {"cosine_distance_without_first_pc": "去掉第一主成分后到参照行均值的余弦距离",
                       "cosine_distance_without_mean": "同上，去掉所有行的均值后",
                       "cosine_distance": "到参照行均值的余弦距离",
                       "l2_distance": "到参照行均值的 L2 距离",
                       "input_l2_norm": "每一行的 L2 范数"},
        "trained_padding": "没有词元指向却看似训练过的行，已从参照中去掉：{count} 个（{ids}）。",
        "trained_rule": "一行若有限、不全为零、不是另一行的精确副本（从未训练的行常被填成同一个值），且其 L2 长度在"
                        "词元所指各行（已知未使用的词元除外）长度中位数的 {factor} 倍以内，即看似训练过（{ranges}；"
                        "中位数不同于低百分位数，有些词元训练不足时也不会移动）；看表，未共享时也看输出头",
        "rule_range": "{part}：{low} 到 {high}", "rule_none": "{part}：没有可取中位数的行",
        "undertrained_intro": "指标（Land & Bartolo 2024）：{indicator}，在{part}上测得。参照行：{reference} 个"
                              "（{by}）。阈值：{population} {size} 个的主指标第 {percentile} 百分位数 = {threshold}；"
                              "候选：{count} 个。",
        "populations": {"reachable": "可达的词元（OK；候选取自 OK 与 OK_SPECIAL）",
                        "typed_normal": "类型为 normal 的词元（没有可运行的分词器；候选取自 normal 与 control）",
                        "with_token": "有词元的行，不含特殊词元（没有可运行的分词器）",
                        "every_row": "行，全部（没有词表）"},
        "ids": "id",
        "reference_by": {"padding": "没有词元指向的行", "named": "名如 {like} 的词元",
                         "unused_type": "类型为 unused 的词元", "given": "给定的 id"},
        "skipped_parts": {"accounting": "与分词器的行核对", "reachability": "可达性",
                          "undertrained": "训练不足的词元"},
        "figure": {"title": "{table}：训练不足的词元（{part}）",
                   "x": "词元 id", "y": "{indicator}",
                   "threshold": "阈值：第 {percentile} 百分位数 = {value}",
                   "tokens": "其他行（候选仅限可达词元）", "reference": "参照行（{count} 个）",
                   "candidates": "候选（{count} 个）", "lowest": "最低的 {count} 个：id、词元、值",
                   "not_drawn": "没有指标、未画出的行（该行含 NaN 或无穷大，或所测的表中没有这一行）：{count} 个"
                                "（{ids}）"},
        "more_listed": "另有候选 {count} 个",
    },
}


def check_language(lang: str) -> str:
    """``lang`` itself when it is one of ``LANGUAGES``; the one check of a report or figure language.

    Raises
    ------
    ChoiceError
        (a ``ValueError``) naming the value and the choices.

    >>> check_language("en")
    'en'
    >>> check_language("fr")
    Traceback (most recent call last):
    ...
    embedlab.errors.ChoiceError: unknown language 'fr': expected one of ko, en, ja, zh
    """
    if not isinstance(lang, str) or lang not in WORDS:
        raise ChoiceError(f"unknown language {lang!r}: expected one of {', '.join(LANGUAGES)}", parameter="lang",
                          value=lang, expected=f"one of {', '.join(LANGUAGES)}")
    return lang


# The diff's words (``embedlab diff``: ``report.diff`` writes its Markdown, ``report.views`` its terminal summary
# in English). Fields are already-formatted values from the renderer.
DIFF_WORDS: dict[str, dict[str, object]] = {
    "en": {
        "title": "Diff of {a} and {b}: what changed, and did the new rows train?",
        "intro": "A: {a}, V = {V_a} rows x D = {D_a}. B: {b}, V = {V_b} rows x D = {D_b}.",
        "rows": "Rows: {shared} shared ({by_id} by id, {by_token} by token string where the ids differ); {added} "
                "only in B (added), {removed} only in A (removed).",
        "changes": "Exactly equal: {equal}; changed: {changed} (L2 change of the changed rows: median {median}, "
                   "largest {max}; relative change ||b - a|| / ||a||: median {relative}).",
        "unchanged": "Every shared row is exactly equal in A and B.",
        "new_rows": "Added rows against their initialisation (the mean of A's rows, as transformers' mean resizing "
                    "starts them, or zero): a row within {tolerance} of A's spread around that point (median "
                    "distance {spread_mean} from the mean, {spread_zero} from zero) is still there. Still at their "
                    "initialisation: {at_init}; moved: {moved}.",
        "alignment": "Orthogonal Procrustes, B rotated onto A on the shared rows{options}: aligned cosine mean "
                     "{mean}, lowest {min}; residual ||A - aligned B||_F = {residual}.",
        "overlap": "Neighbour overlap (Gonen et al. 2020): the share of each token's {k} nearest by cosine that A "
                   "and B have in common, each searched over its whole vocabulary, for {queries} shared tokens{sample}: "
                   "mean {mean}; the same {k} neighbours: {full}; none in common: {none}.",
        "sample": ", sampled with seed {seed}",
        "centred": ", both centred on their mean row", "scaled": ", B scaled by {scale}",
        "verdicts": {"mean": "at the old rows' mean", "zero": "at zero", "moved": "moved"},
        "by": {"id": "id", "token": "token"},
        "headings": {"lowest_overlap": "Tokens whose neighbours changed most (lowest overlap)",
                     "summary": "Summary", "most_moved": "Rows that moved most",
                     "least_moved": "Rows that moved least (of those that moved)", "new_rows": "Added rows",
                     "drifted": "Rows that drifted most after alignment", "removed": "Rows only in A",
                     "skipped": "Skipped", "notes": "Notes"},
        "columns": {"overlap": ("A id", "B id", "token", "overlap", "L2", "aligned cosine"),
                    "moved": ("A id", "B id", "token", "matched by", "L2", "relative", "aligned cosine"),
                    "new_rows": ("B id", "token", "verdict", "from the mean", "from zero"),
                    "removed": ("A id", "token")},
        "new_columns_note": "distances in units of A's spread around that point",
        "geometry": {"heading": "Geometry of each table", "columns": ("measure", "A", "B"),
                     "mean_cosine": "mean cosine of {pairs} random pairs (Ethayarajh 2019)",
                     "first_pc_share": "share of the variance on the first principal component",
                     "isoscore": "IsoScore (Rudman et al. 2022; 1 = isotropic)",
                     "partition_ratio": "partition-function ratio min Z / max Z (Mu & Viswanath 2018; 1 = isotropic)",
                     "mean_norm": "length of the mean row",
                     "mean_norm_ratio": "length of the mean row / mean row length",
                     "abtt_overlap": "neighbours kept after removing the mean and {d} top components (all-but-the-top)"},
        "figure": {"title": "{a} → {b}", "drift_title": "Drift after alignment, by token id",
                   "drift_x": "token id (A)", "drift_y": "1 − aligned cosine",
                   "overlap_title": "Neighbour overlap of {queries} tokens (k = {k})",
                   "overlap_x": "neighbours in common, of {k}", "overlap_y": "tokens",
                   "geometry_title": "Geometry of each table", "side": "{side}: {table}",
                   "measures": {"mean_cosine": "mean cosine", "first_pc_share": "first PC share",
                                "isoscore": "IsoScore", "partition_ratio": "min Z / max Z",
                                "abtt_overlap": "kept by ABTT"}},
        "more": "… and {count} more (--json lists all)",
        "skipped_parts": {"rows": "row changes", "new_rows": "added rows", "alignment": "alignment",
                          "overlap": "neighbour overlap", "geometry": "geometry"},
    },
    "ko": {
        "title": "{a}와 {b} 비교: 무엇이 바뀌었고, 새 행은 학습되었나",
        "intro": "A: {a}, V = {V_a}행 × D = {D_a}. B: {b}, V = {V_b}행 × D = {D_b}.",
        "rows": "행: 공유 {shared}개(id로 {by_id}개, id가 달라 토큰 문자열로 {by_token}개); B에만 있는 행(추가) {added}개, "
                "A에만 있는 행(삭제) {removed}개.",
        "changes": "정확히 같은 행: {equal}개; 바뀐 행: {changed}개(바뀐 행의 L2 변화: 중앙값 {median}, 최대 {max}; "
                   "상대 변화 ||b - a|| / ||a||: 중앙값 {relative}).",
        "unchanged": "공유하는 모든 행이 A와 B에서 정확히 같다.",
        "new_rows": "추가된 행을 초기값과 비교한다(transformers의 평균 크기 조정이 쓰는 A 행들의 평균, 또는 0): 그 점 "
                    "둘레 A 행들의 퍼짐(평균에서 중앙 거리 {spread_mean}, 0에서 {spread_zero})의 {tolerance} 안에 있는 "
                    "행은 아직 초기값에 있다. 초기값에 그대로: {at_init}개; 움직임: {moved}개.",
        "alignment": "직교 프로크루스테스, 공유 행으로 B를 A에 맞춰 회전{options}: 정렬 뒤 코사인 평균 {mean}, 최저 "
                     "{min}; 잔차 ||A - 정렬한 B||_F = {residual}.",
        "overlap": "이웃 겹침(Gonen 외 2020): 토큰마다 코사인으로 가장 가까운 {k}개 가운데 A와 B가 함께 가진 비율, 각 표의 "
                   "어휘 전체에서 찾음, 공유 토큰 {queries}개{sample}: 평균 {mean}; {k}개 이웃이 모두 같음: {full}개; "
                   "하나도 안 겹침: {none}개.",
        "sample": "(시드 {seed}로 뽑음)",
        "centred": ", 두 표 모두 평균 행을 빼고", "scaled": ", B를 {scale}배",
        "verdicts": {"mean": "옛 행들의 평균에 있음", "zero": "0에 있음", "moved": "움직임"},
        "by": {"id": "id", "token": "토큰"},
        "headings": {"lowest_overlap": "이웃이 가장 많이 바뀐 토큰(겹침이 가장 낮음)",
                     "summary": "요약", "most_moved": "가장 많이 움직인 행",
                     "least_moved": "가장 적게 움직인 행(움직인 행 가운데)", "new_rows": "추가된 행",
                     "drifted": "정렬 뒤 가장 많이 벗어난 행", "removed": "A에만 있는 행",
                     "skipped": "건너뜀", "notes": "참고"},
        "columns": {"overlap": ("A id", "B id", "토큰", "겹침", "L2", "정렬 코사인"),
                    "moved": ("A id", "B id", "토큰", "맞춘 방법", "L2", "상대", "정렬 코사인"),
                    "new_rows": ("B id", "토큰", "판정", "평균에서", "0에서"),
                    "removed": ("A id", "토큰")},
        "new_columns_note": "거리는 그 점 둘레 A 행들의 퍼짐을 단위로 한다",
        "geometry": {"heading": "표마다의 기하", "columns": ("측정", "A", "B"),
                     "mean_cosine": "무작위 쌍 {pairs}개의 평균 코사인(Ethayarajh 2019)",
                     "first_pc_share": "첫 주성분이 차지하는 분산의 비율",
                     "isoscore": "IsoScore(Rudman 외 2022; 1 = 등방)",
                     "partition_ratio": "분배 함수 비 min Z / max Z(Mu & Viswanath 2018; 1 = 등방)",
                     "mean_norm": "평균 행의 길이",
                     "mean_norm_ratio": "평균 행의 길이 / 행 길이의 평균",
                     "abtt_overlap": "평균과 상위 주성분 {d}개를 뺀 뒤에도 남는 이웃(all-but-the-top)"},
        "figure": {"title": "{a} → {b}", "drift_title": "정렬 뒤 벗어남, 토큰 id별",
                   "drift_x": "토큰 id (A)", "drift_y": "1 − 정렬 코사인",
                   "overlap_title": "토큰 {queries}개의 이웃 겹침 (k = {k})",
                   "overlap_x": "{k}개 가운데 함께 가진 이웃", "overlap_y": "토큰 수",
                   "geometry_title": "표마다의 기하", "side": "{side}: {table}",
                   "measures": {"mean_cosine": "평균 코사인", "first_pc_share": "첫 주성분 비율",
                                "isoscore": "IsoScore", "partition_ratio": "min Z / max Z",
                                "abtt_overlap": "ABTT 뒤 남는 이웃"}},
        "more": "… 그 밖에 {count}개(--json에 모두 있다)",
        "skipped_parts": {"rows": "행 변화", "new_rows": "추가된 행", "alignment": "정렬",
                          "overlap": "이웃 겹침", "geometry": "기하"},
    },
    "ja": {
        "title": "{a} と {b} の比較：何が変わり、新しい行は学習されたか",
        "intro": "A：{a}、V = {V_a} 行 × D = {D_a}。B：{b}、V = {V_b} 行 × D = {D_b}。",
        "rows": "行：共有 {shared} 個（id で {by_id} 個、id が違いトークン文字列で {by_token} 個）；B だけの行（追加）"
                "{added} 個、A だけの行（削除）{removed} 個。",
        "changes": "完全に同じ行：{equal} 個；変わった行：{changed} 個（変わった行の L2 変化：中央値 {median}、最大 {max}；"
                   "相対変化 ||b - a|| / ||a||：中央値 {relative}）。",
        "unchanged": "共有する行はすべて A と B でまったく同じ。",
        "new_rows": "追加された行を初期値と比べる（transformers の平均によるリサイズが使う A の行の平均、または 0）："
                    "その点のまわりの A の行の広がり（平均からの中央距離 {spread_mean}、0 から {spread_zero}）の "
                    "{tolerance} 以内の行はまだ初期値にある。初期値のまま：{at_init} 個；動いた：{moved} 個。",
        "alignment": "直交プロクラステス、共有行で B を A に合わせて回転{options}：整列後のコサイン平均 {mean}、最低 "
                     "{min}；残差 ||A - 整列した B||_F = {residual}。",
        "overlap": "近傍の重なり（Gonen ら 2020）：トークンごとのコサインで最も近い {k} 個のうち A と B が共通に持つ割合、"
                   "それぞれの表の語彙全体から探す、共有トークン {queries} 個{sample}：平均 {mean}；{k} 個の近傍がすべて同じ："
                   "{full} 個；まったく重ならない：{none} 個。",
        "sample": "（シード {seed} で抽出）",
        "centred": "、両方の表から平均行を引いて", "scaled": "、B を {scale} 倍して",
        "verdicts": {"mean": "元の行の平均にある", "zero": "0 にある", "moved": "動いた"},
        "by": {"id": "id", "token": "トークン"},
        "headings": {"lowest_overlap": "近傍が最も変わったトークン（重なりが最も低い）",
                     "summary": "要約", "most_moved": "最も動いた行",
                     "least_moved": "最も動かなかった行（動いた行のうち）", "new_rows": "追加された行",
                     "drifted": "整列後に最もずれた行", "removed": "A だけの行",
                     "skipped": "省いた部分", "notes": "注"},
        "columns": {"overlap": ("A id", "B id", "トークン", "重なり", "L2", "整列コサイン"),
                    "moved": ("A id", "B id", "トークン", "対応づけ", "L2", "相対", "整列コサイン"),
                    "new_rows": ("B id", "トークン", "判定", "平均から", "0 から"),
                    "removed": ("A id", "トークン")},
        "new_columns_note": "距離はその点のまわりの A の行の広がりを単位とする",
        "geometry": {"heading": "表ごとの幾何", "columns": ("指標", "A", "B"),
                     "mean_cosine": "ランダムな {pairs} 組の平均コサイン（Ethayarajh 2019）",
                     "first_pc_share": "第 1 主成分が占める分散の割合",
                     "isoscore": "IsoScore（Rudman ら 2022；1 = 等方）",
                     "partition_ratio": "分配関数の比 min Z / max Z（Mu & Viswanath 2018；1 = 等方）",
                     "mean_norm": "平均行の長さ",
                     "mean_norm_ratio": "平均行の長さ / 行の長さの平均",
                     "abtt_overlap": "平均と上位 {d} 主成分を除いた後も残る近傍（all-but-the-top）"},
        "figure": {"title": "{a} → {b}", "drift_title": "整列後のずれ、トークン id ごと",
                   "drift_x": "トークン id (A)", "drift_y": "1 − 整列コサイン",
                   "overlap_title": "トークン {queries} 個の近傍の重なり (k = {k})",
                   "overlap_x": "{k} 個のうち共通の近傍", "overlap_y": "トークン数",
                   "geometry_title": "表ごとの幾何", "side": "{side}：{table}",
                   "measures": {"mean_cosine": "平均コサイン", "first_pc_share": "第 1 主成分の割合",
                                "isoscore": "IsoScore", "partition_ratio": "min Z / max Z",
                                "abtt_overlap": "ABTT 後に残る近傍"}},
        "more": "… ほか {count} 個（--json がすべて示す）",
        "skipped_parts": {"rows": "行の変化", "new_rows": "追加された行", "alignment": "整列",
                          "overlap": "近傍の重なり", "geometry": "幾何"},
    },
    "zh": {
        "title": "{a} 与 {b} 的比较：什么变了，新行训练了吗",
        "intro": "A：{a}，V = {V_a} 行 × D = {D_a}。B：{b}，V = {V_b} 行 × D = {D_b}。",
        "rows": "行：共有 {shared} 个（按 id {by_id} 个，id 不同、按词元字符串 {by_token} 个）；仅在 B 中（新增）"
                "{added} 个，仅在 A 中（删除）{removed} 个。",
        "changes": "完全相同的行：{equal} 个；变了的行：{changed} 个（变了的行的 L2 变化：中位数 {median}，最大 {max}；"
                   "相对变化 ||b - a|| / ||a||：中位数 {relative}）。",
        "unchanged": "所有共有的行在 A 与 B 中完全相同。",
        "new_rows": "新增的行与其初始值比较（transformers 按均值扩表所用的 A 各行均值，或零）：与该点的距离在 A 各行"
                    "围绕该点的散布（到均值的中位距离 {spread_mean}，到零 {spread_zero}）的 {tolerance} 以内的行，"
                    "仍在初始值。仍在初始值：{at_init} 个；已移动：{moved} 个。",
        "alignment": "正交 Procrustes，用共有的行把 B 旋转对齐到 A{options}：对齐后余弦均值 {mean}，最低 {min}；"
                     "残差 ||A - 对齐后的 B||_F = {residual}。",
        "overlap": "近邻重合（Gonen 等 2020）：每个词元按余弦最近的 {k} 个中 A 与 B 共有的比例，各自在整个词表中检索，"
                   "共有词元 {queries} 个{sample}：均值 {mean}；{k} 个近邻全同：{full} 个；毫无重合：{none} 个。",
        "sample": "（用种子 {seed} 抽样）",
        "centred": "，两表都先减去均值行", "scaled": "，B 乘以 {scale}",
        "verdicts": {"mean": "在旧行的均值", "zero": "在零", "moved": "已移动"},
        "by": {"id": "id", "token": "词元"},
        "headings": {"lowest_overlap": "近邻变化最大的词元（重合最低）",
                     "summary": "摘要", "most_moved": "移动最多的行",
                     "least_moved": "移动最少的行（在移动了的行中）", "new_rows": "新增的行",
                     "drifted": "对齐后偏离最多的行", "removed": "仅在 A 中的行",
                     "skipped": "跳过的部分", "notes": "提示"},
        "columns": {"overlap": ("A id", "B id", "词元", "重合", "L2", "对齐余弦"),
                    "moved": ("A id", "B id", "词元", "对应方式", "L2", "相对", "对齐余弦"),
                    "new_rows": ("B id", "词元", "判定", "距均值", "距零"),
                    "removed": ("A id", "词元")},
        "new_columns_note": "距离以 A 各行围绕该点的散布为单位",
        "geometry": {"heading": "各表的几何", "columns": ("指标", "A", "B"),
                     "mean_cosine": "{pairs} 对随机行的平均余弦（Ethayarajh 2019）",
                     "first_pc_share": "第一主成分所占方差的比例",
                     "isoscore": "IsoScore（Rudman 等 2022；1 = 各向同性）",
                     "partition_ratio": "配分函数比 min Z / max Z（Mu & Viswanath 2018；1 = 各向同性）",
                     "mean_norm": "均值行的长度",
                     "mean_norm_ratio": "均值行的长度 / 行长度的均值",
                     "abtt_overlap": "去掉均值和前 {d} 个主成分后仍保留的近邻（all-but-the-top）"},
        "figure": {"title": "{a} → {b}", "drift_title": "对齐后的偏离，按词元 id",
                   "drift_x": "词元 id (A)", "drift_y": "1 − 对齐余弦",
                   "overlap_title": "{queries} 个词元的近邻重合 (k = {k})",
                   "overlap_x": "{k} 个中共有的近邻", "overlap_y": "词元数",
                   "geometry_title": "各表的几何", "side": "{side}：{table}",
                   "measures": {"mean_cosine": "平均余弦", "first_pc_share": "第一主成分比例",
                                "isoscore": "IsoScore", "partition_ratio": "min Z / max Z",
                                "abtt_overlap": "ABTT 后保留的近邻"}},
        "more": "… 另有 {count} 个（--json 列出全部）",
        "skipped_parts": {"rows": "行的变化", "new_rows": "新增的行", "alignment": "对齐",
                          "overlap": "近邻重合", "geometry": "几何"},
    },
}
