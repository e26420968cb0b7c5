"""ggml's i-quant grids (``iq2xxs_grid`` ... ``iq1s_grid`` of ggml-common.h) as data.

Each grid entry is the little-endian byte image of ggml's ``uint64``/``uint32``
table word: one byte per lattice coordinate (unsigned magnitudes for the IQ2/IQ3
grids, ``int8`` -1/0/+1 for ``iq1s``). The six tables are concatenated in the
order of ``_LAYOUT``, zlib-compressed and base85-encoded below; the SHA-256 of the
raw bytes guards the transcription. Decoding happens on first use.
"""
from __future__ import annotations

import base64
import hashlib
import zlib
from functools import lru_cache

import numpy as np

# (grid, entries, coordinates per entry, coordinate dtype)
_LAYOUT = (
    ("iq2xxs", 256, 8, np.uint8),
    ("iq2xs", 512, 8, np.uint8),
    ("iq2s", 1024, 8, np.uint8),
    ("iq3xxs", 256, 4, np.uint8),
    ("iq3s", 512, 4, np.uint8),
    ("iq1s", 2048, 8, np.int8),
)
_SHA256 = "73200ae7c65920e044fd65660b5c6ef66d2bdd99c3e9897a1e32eadd1d7d21f2"
_PACKED = (
    "c-qxlJF_Y|ueFLz0R<EZiK__7Oh~-{|G)B;EiG9R^qhHo$=!^{bkpsJo=cL?@hE>y`&#3TrhPruuMf2JVAH-"
    "H^@aRmlfLp7x!uBm4SmD43|O`0fon|@VBi)9UajH#9Ju<y-2`<!G4Hi7VZ+1?J8M;6X*x#JarC-"
    "1zrcotHY~Ww{W`ZY9<QEKbr7h^GTJxF@nzF_{Dv`yHB8=`ZbG&=chPipO;_UyrE|{*+8Sa$=17wXiNV*8?JHqx{S$$O!"
    "$KBM@Fq`G5c)fTWq5t)3&GnUvm-bfX0oLpYhb{f$uUBBG#{RlH)nPXF>QgASBOljUi6#xA~v2OUUrv=87UW|=4ORli*f"
    "Y`Qa9<Rq<My_MvNbYu|uMavLB3AT0nSg?qkq`s?rSN8HbjD)FddnR*1iHp;qmWL44;tZdX%Kf<U$Jf>oPH1Y~G_a{>lQ"
    "u{V;2i%>dEmj%eWo2simCu9udG@UaUkK|bb+#txJEs*NTzBRnivFg;LpAQQ0MHXuHmPJUS^G<<pO7ck?5xu`sgw}#W$X"
    "reS6Pd1FL28A?a>N%!X>x6r%)1@96I%cz);I!PJepP?y{R;gsmO?t^)lFk1vImuR8YIyboEUg3)Hy56p4-"
    "cqL`{{kae}1O4@n9sg1|OlLN|jkw76-1-"
    "Eon<1O>Ly8XpDC8$}QCL*Z2ToU;&{lB{L?7q#?)fxxLc%aqbC6Cb?itPRqybz3}Ge}s7h}c?C{qCKzyH8$dExc);-"
    "F<fNHF}++y7|uywpKsA%;$!)I|l)h8#h8kudoPGYvfRC-|-"
    "MM{=1bvDrnhs?;mbm#C{RB9%~@*hnwHRRmob`8VO(F?h^yB<je?|hK0Mny8UF;WV(RE0*L*@VQ{t4YOR+5vbONqv1LgY"
    "Q_-55jPG#37_VCpn-w&o1wj}_S?{-"
    "RI1e=0aQnyP_BY)<wpwcxtQxqr1WZuw5~(eL1L<mw0*Fr*#Oj^wH;wns>I*Drn}XWv7q@S+2^qi&vLItc*v!JQb%9PN;"
    "8^*lpqqdz&TZ;^w%mMHfb8ZI{vF=Y<KH1g-*7ON9HYDixU%Aa(wmB-"
    "&>*?{%>c(hj^XO|RiU<Uwz$$y1q04*YGJDo#3Z2!jYexh0lg7+cwAtWh6WA)Q*hQ4mgxIU-"
    ")n9Ma;a~9!Si5Yjcyt;3z_*N-"
    "Uo$hP558?8r|QD2kPI83vjbWH)EQU4M>e{;KPt0o)C_>xFQ)Ajlv9(WkUmM)M(~RbFqpV&6cfg+aN_v|1eNBsQV1&yuo"
    "Tfwu0=<fc@>bMp1AxBXG1St6!l89TU;&xIWH-"
    "X4LvU?)fl;np~)ny&s0LMlu_*W#nZbTSfp%xhC3RmN6U78mF;@fly18(i_%hyKL1Z7Vt&V0`eswjSA3ntlltJF%oJ+S6"
    "tS#&jW25a9z8_WE#VWclQa6CV@o*G^ouR_+|+X2(v|$qQfEphGnPGZyFR!N<@73j7^sX%<&#JbZl{B*<k>jV8dIE!{S9"
    "Xj{2ez2pZ5f9LyqMO%A68$J1;sZ*{lh(DsLTRMT6_aj8a%qKWUF6mH;YOb{uKY<T);9t5sVoe7K}+{+QaNUxI8lyW8zT"
    "aHmT)XaRUnbd3@(1uBd%)J~aB;70w)L3*y1k@$6n)V`{YU0|IxG7?y?A288s6VFkLQ7(0tZgl_SlM7B&e0r#ZWeDJ7tt"
    "cJUZGZX3NjZdYo3|`PIz$N+z{%~t*s1`yskYQzdmM&41fP$<A0?0Lz49$<O3`ZP+Q>qf6WX0*L(o7(KUvnM{isIDo@ak"
    "H3BPyrHN4gG>@PX_z_mNY8kG-%rC&Rw-yNxo%vtq9gqdC?eFCw+8^=}5nZjsW3Auw6hKY2MS-X_hJ|niTXmwG*JvC0jr"
    "KhpJZe%}V~NkOaMhinAU5PhY7|V%lOzFcF|1S{wCYz`fOCEYE!VjK)Gd2lqo7ALvMd99`j!H0<!5quiOtpaJx|j%>S@R"
    "-*Y>@>2F!?jPEA>6D4uz52`c}X=TR?vwDONCC<-"
    "N(2U71Uq4282EyZmiUz9Vb^;m;qZ+baZ^eW!yf1XEb|1zHh;8k17FCAM5*p3_drnXhbRKsJ{(PV(O@=|RhKc#hoW6U~L"
    "Ej?J6Xa+2YiS2v1XrUe=CKx)aekOxw;be^lFol;NVP$R6FjjzBUp#RJvVIRQS6I1WF#m2|4MwWA`n66B1Do@1Z6p8IP>"
    "!q75QFmBAj1UURUyOTP&U{(p9h;*Q+Nv6qQS6()7iko1l1JPLL#!^k5THU1Hjf{GiwZI%^^Utwj6_`3qQlzRvp;*3~#N"
    ")>fcgUums6kFm*YY7VG*czu9t~Uwr~JAUh^#M0QXL^(FNB3r8iv&7bq8IqU_ku@=jp)({47=2Ib*5Q^;h5ZN48fccksS"
    "LpgmEJcS17iTJQtX~}@Ak~(mbb+l#<{`|*sR-vteKvJF-`l>IaZRTHS}feHF)xgnt=t<<9eg@!A-"
    ";Fm5n01Tr1J2GLtp1TqGNA%{^J<((#z4;;P5M|^T&lD4J@y+vsva03>J~)0+!oc;}ItqH2iHb0b#)5f1Jl|8~N<^AM@H"
    "Ujx~m9CP{zFcY|4AMs>M@f0GY~%}rqnylypFN%?Y^x*Ed<ll&UPfpuOd0jier?Xa#j!gm8&f6T+z1i)&{%hw2Z&9i5KR"
    "wIo4V?Mua<n`M|ejl1&BOLt5`@@CQ2;a<N)CkKAiDW<s%aY(#hEoO<b6o*UsS*B|rK%Cun9csELmUGPG1FfoyfDD2No+"
    "$-"
    "TL2UmG9B`<C1qe*qkDELaCBMd&w5CW?$InVFcL5XkX#11?fBK*W%sr+1RFpYmOo`vUHv7v3)9sP;H;SjHRIWQZvyJSTe"
    "ks*%jehNYis@Mx(;}g%#dxVM)R_c0VV(sj|lJpXi=jX_^2Df2-"
    "T>bM#>u1&X|}30ZdY(dRWT=LXG145h&CsW~NFxaHvr%jCPXbUV%jYe%#QY!7;MIVgOk08p&xs4_2;5^4OkpKvLs&J^~X"
    "+O^wr<>Bs>~jX!?`E;Su@gv)9;Bbx#lAS1j82#Nu6pksBr6!5eb10PKErvRv;Y*tabX<zGnEd@wWbu1h)4K|PiCu|6|s"
    "HSq)XFwG*bL|+)SLT#Kh#YW%Fk69Fl`_`10L-"
    "CQCCImPr7aRT2WlYrR=@^EYz1zBs9+LIs&S*D1n&+9wgqkQt{now3GCKz61#ea|I@lCmV#K#BzdDg3flmIfvkcjXjy>Z"
    "A#?o{;OZFD=_Y7kEd<V-S4?Z0Af|s7VI~o69h}z_%tAB^RH31$pw)Pq-UQk_xcZP>uSIAMf#0m(wx|flnAS7JfX|15m@"
    "P!z_vlf>X9gMG6bc1z2gNcMp<9KbZ3Wg%l?u$yfwrCk_z1X7YK|doV2W$I)m0)AghCtQIikATYN$iY@ut?$TT1zR9U9@"
    "=F@|SmAhrT|M548Zu*eKZ4)h^&TLFJIG;qx|{410dswn(5L$s9ufTcM4qNT5ww`jm}qQL(7z(&HL=_wu<ygwxn>~Mz~8"
    "$G6C2i{<na)JRRcxaW>s8{ffdOb1%Y8EX40RwAwdNpS))$3t+bE3jT2{m*a`>#+3pVeBKh@(FQ;R^6EyRp8)z;7iyMAF"
    ")7%2snFN(MUz&@4x#^?nIqR-NDPs-"
    "@Eherd;0|Nr5?JGUpd%jM_i!R_}VH}Bjo5AONL$M4V2i`#`i4{qb(JGaaI^7FdOi+669=jG@5T7!(wliTGY1Kzn^9`~O"
    "Iw_k3T7x&y=zxO%vFSjx2o!jfq-+v!G^pm^i&-"
    "2Os>&a_*^7BuA{>9I~cwTO=*U#(m{&~LN{QmFHliQoy<N5n@dH>E8KV<o1$zwTV8FMo{&E?5Whn$-"
    "mD;|GillQxP8LJv^kI%UI^Wbm4viZ9b;PQA}-cN3C{?4m-ar=33yT2|^Zf_>e<@d$+-#i2p=_!O7)VT-=C(#C}-"
    "glXl=|3kPOXcNFVvZGz&zSnbL;Z4NnolB+*DrH)A^7-"
    "XS~DZ=OeR_Q*!}Y&On7p8J)TTPZcO#xJ9G5;;`@WMzkKia&a}M0p0e4WxpUd{U?tP+@p|(;W!_yGI6hCF<jrktjc-"
    "nB^AdPMZofjX@yCo}wm$hDb7FGx#VdY2UN2tR<^33+2NU)2V1alKX_%CIz8>6jV-euxvWWb$u-"
    "xaCSYWul?<^90%@e$yyc~Yy@?uGPKY54a&T9%4OVV>lz<o%;WAs1FFcmPC()Vch3onP?zRcANp?K@#!xF>`ezF+zu)oh"
    "C(XY#62<4lp`a6mFy#Mg5KkqlU=X(gi<vl*kC%(Qj1?LXmV|C+2W|nOF=XY{=Xag_im(_3xv@nKO$m^N{KcsO?HdZz?m"
    "KX3l2=?=S@DzhG&#A>j+gKKvB=2A1za6(dw==h!-"
    "q>;5b31Xn>H|A&XKsfBU!V9Ew==gJw;jKH7z14SKDQkYbmDf?0mo<0?WBY6xSe&91GgKu-GT3MJMpADp7hLZf0N0_+h="
    "Y!UC4pkmD_I5_xEE_dpdF3pZJ>FjoXeFdl(D8aX%V=cDn=5%Ny7qXwPlOn>ld1ayy;){+aJ{yIuLW8$WxK%^r3qx^dg_"
    "rcd1V2j29F?{nKJ5ylEngNl1zDYq-"
    "P0~2L;I`f*&{0QH>^1U1P{MqfUJTCW#E5E}1?K(Lyc6l0{*z<R8S8j&`U!VE@SqQolcI-|{+?|kbcjk6eVl!FBc6Yq3-"
    "PjIKzvJo0v^yShGGZr>j9YV*6Sv)-zaRMiL2e92?FX}N{M=2LHa=%=H*UPh-"
    "HF?NF!HqD9k`v({Qb)JZZg=QAn#(Xa(wvV-HjV>jMvB4C+6stuW$S-"
    "OC3{^M?TFD56ElbYZi>_5RNn7J<Gzzjt@IoATyhX<?m<yzQ6LCt~>|#rz^jAof}}zP6~~c^Wt{r1NSGs=8dtiPGQ?k=@"
    "?ub91!6fyFATN$L9HWZY)wmsD>EvQm07l&msnc{d;ET6j)~6{;YyK*g|vnV|Kpg(awXIy!}Cf{YeSSL!2h}#}hmSH<t1"
    "J?I6Tvx!&Kn@do#&n<&6|;5@WxcbIRS215>qJ<B&g#4A1@_SdU0i6v<&%Xo?x&LYoDJMni`obzo+IIoHoh&RG>vJ#!nJ"
    "SX?Jp-@+z>pCTq3AaC=xxWr+AIxTo??vGbyfBv8xwzfr^xzQxvXjN`MD-"
    "4=ZoG`CN{8DJl%Y1)B``xvS!@qO5_WS(Q$$#4d85qI>rE7TNZ{bc`0#dFc}2izN)JyzDRCGpn==o=;|F<8*3vV7zm4Ub"
    "rZBS9Orq_^NN3id>*;XfHY^m&9M5%Ts&LP%Kb_8p>lon1J!{(TB!bMc#_PFFuCbg=Lo%$!U;s-"
    "4Q=0~bm<ha_(=;7J?T6)J(>YafE@p6isL*+=cqqh~zjGTRc^FohMTbS^G^FQn5Cg?*V)5tixBawILy5*_hLjG550dbTr"
    "x6=V;a5(#!2$ldyPc-Rx(!9+&F`;FfT4MZ>xm5*&&QT*cbnW|9`kyJwdK`M&79_V8bTh8f8lE$?0S^}hr$j5o`-ebO-U"
    "bIIuBJGDmN7Qu%BXlW>K9)9#;HDQv_I=4m>W45&yyu46^c=Yz??EDR`{YnOAxq7HCK&cjHN>#&rtsX$UZD4$I?U(v@Gn"
    "?!^3G=Z8%sYx9*Qd6<kT;4A^xK}{azIzCKOevXO3qQ^3IWs$j#37CBR>xqBkm2u-"
    "`@`&f_u=;emvH@bRqDKBCu5lWBrq^&c)94R3F=rS?ieF%1VYcje;lr%&hnKkx>wO*OW0;4b0cR-"
    "Okif$fHl_)C8D{AarTt_j&%@+n2g15LwPq}#>mO-fO1weZmtOSu_yDB`N&BKN6pW}ZlJ=!g7>Lq<q&+_#CZIGC*@W}II"
    "a|^77Pk=6eoQ;BwI9P5eO;cDe%zkdy6{q@C*44qBg%mCo?a8_^PO}Z<Tp&(a~B9ei4dgyn9UQ05`jqju{~0HlP-"
    "&NeR55Kkdz2Y+K*v$Uea*_!6^}*v@eMPr2Sllex3g#?Tavk5@QN_c~X`y_sLHIhM|#tFM*My{e0a?;(ToW-"
    "c2H9$t5tnXivDN5+s?lFNK1DkoJodA|Rzifg$aS2@dIV(i5&J3f3SKDP6w_8fjlj61+LF$S=wGa!uOLg{T}jL7j5o1eT"
    "KELa3A|_7Ek3ChaHJN$mqEHAz?R1fG)MllIdtI7OhO5Tw1(PVIqHlqqJUicV?=Xo)N=PeEUBO+mpXdq~MoN`6vu%RHpx"
    "2L+_0h-i}xPBAGdC~03*QHyAXEJxQzN=L7_ApIQPDKZi6m!Q~`6r7;w!MYYxMhIcDLZ<rJK$NT<L7EGsSEUf#TL#6b-"
    "UAhEbv=w)Oa`!a(q7Dv7!dyp43(IjBKAUNgTX3(1kxUct!PiUrV>1nm;qHpd7tz>U5R?ALSbd1F5-"
    "Pi=}hYBNCzXeo}}v{T@NX}Nv(}Hu%x|+-`Y70FKI7gvV5!B2-B_ZjjJ=vFfOX(U6n%Fq{J;s46z|@F^dB*@I`yVHR-"
    "h)ej%fG0G)K56g+&9zGy!eR#cnC7?S5a97#b>(!*C{iO^+82xx*v_)hw}N)SPk3Izv66eX-"
    "L5|pBJ^O8r&ffelu*Xq!SqNKvX73~Sv6dfN-"
    "c3&(A4w2v(P4Y`{ltp{OHR&})M@rg@KU^9F)1kh(lU=KBXzQfkwHFBy`SS>lfaI1ase{(vwKvUGM^13)r1#Oo!OO<P9y"
    "^C$v?ufm0Eo0#AW%vK0HY&kv#`e^PRA??j2{(e6lehm2u%-"
    "@D{!LqGJpnYUr2kX+SDl3BT~I^fQ0&z@j`0Vyu~Y|&n=T*oC*WTz%l~R6zvJuq}LPyPZ5R)9wS|?u3OhfI$i)oDv5%>W"
    "ZwkLKu)ISfTZ%|Toy=GC;}<cz7z#kq}MW&Os_Ai=_2(2r1MHo()SRBEno%=0o&3;^g!yL7jOe8P*lE*FqEKsRJi~iC7="
    "g1CTM8^KcE@$(+da!ZJ3Gf%SSA)2rmXmw}7KsX|sAgSdHZ=q2;Qzs-"
    "2|Tpny(ngOdtcTuXoyyHbl{wi`621XxLXb3y94Nr9}uNmBSIp4yX?v=_fj8lNq|O9}Xr_HcCo!fH#@AFCWVfLxYJFA!1"
    "I%GDXDu~lPbN=1t)30R9iCH12!2mTTGJn)(*0CBizh!zkHfO$bL2EiyR?uFEykdnXyc<GDwA{eA*dLbnMebQdc@q!GBy"
    "j9}VrYU{NBQ21kXn<hIOM61VAkafq-"
    "6D7~3oDSI6i^^m0Cwm;XmWuDz`sG8?m!Evp1VMVQb0l}FrgHnkoHPCLzD<y)TSD*;W{81kZ@t^LZAqANPA(2>aojMkOn"
    "{!e<}Y+_1OhRlmaAdp*x-"
    "RffAZQKSji(0hBCD_1FbelmaV|NM2ik7NvlTw71+v_gN=Pk69WE8ed|Xs%)gC)ak8&&7#;I(m$n#Xm5pBl+rvYy_2FGL"
    "^FtDKGQoTpmj^zSVYldS_bJDq+bfsE+wW_kUp`9q<>GNm}Lao=<3y@x3@G$PGcCB)bxa<A7E)=wNlyu=>ai4E}+%0yjU"
    "`|#PHaX05N>cVXHln!cmL3VDVG<SpYr&3Mhu1#&Q^a80YSdiVGW4xM-"
    "mfOhbv`UP<AdVMAaQ_y*`?Nr8C^v&_}>7(N+gQg~zmyoE(Qgfk_DFBYbd1^OW@LHJ=?O5ucs4<&{P2m=(zt}wt-ojDAM"
    "FyCT<4fqb&Zkbr5$V!6iJ;L(>c%EQ5V7DQI5@Gd<%n=e0Brd??41bHl-"
    "W4)K6aZHNQxz*v5Ae}UPl@mlFwi7C!#@knBYgXSZRWgSj1$}<H3pX9j<CvNwFILUd`fT$E)=Se;8BJ}fJ2rDQaA+oQvi"
    "DaZ!(NY@TF*;)8Gp-CJI-I!WD^HTrAzc!+`AW&AqE9g8Md$qV6-"
    "h$5dtdaFdqgM{HJN6$RA~OLCUzw#?M@=#ENqKNhsYZBTL#0I`-"
    "33t3=fahDr_`R_hA{pkkGh?bCTTnV<45^WHglm#@iU7~p|$sC&u_GorZRC_e9*_@VSJ}pDmqj@aJ9KzhK6j%@DsU&j*G"
    "qlW)ni)!F#iHFF%*B>DFdq+f29zx+!I;$0q7PLssFk7c{#`vvQU~V&gLs>(>rqTiJbOSpR)n$Gs(%+h^ROj~li8jmHYN"
    "i-ia|;2E{VOyR*LK`iJj&(av~L>M2YMuiTs)D<%8U6Z9rCv<SiwUu|#r}L>^O#61QE_cFbAzxNKW)iOVW!dgD?W-"
    "h{fOL~)6??QQ%~N+jb3QLL2WfnMT+loHQ)k<tLYq=86NeH0VbB_*se5v2rnp17B|07?r%qFXbG8mTMXP(J%ac%iuPUg8"
    "G2%T@YBd2u-)AV<Gp%~M-"
    "KeTx9VUfub6Qt|MK_u_1iH@zSnrNlf4Nr|AnB*JRq9+{T1Qn4YCuPGzNd!LLTWdwB!3?c11>3!`{5GcOJ?HGnaK}m%IF"
    "iv9a#klT^U5=5xM21o-"
    "G?Y|uASCBYWIXlA@V+2eV0_Pvr&v)z1`C3K)JRDMjN*d|FDNAnMlVr7C<#jU#@a!~UZMa|DvY2}60BaLfKe8-"
    "Zlxy(RuH^iq5xtD&ELzF6HGg6k_41c`$z&x8-j|$OhMmE5MXSfyFL5NAuNq1@&p#UBO|1O4+stg&_^Z9MXD!3A-"
    "X%gM0Us|D})t}dI^dFlJ{`xWGPG!r$uNLFC=qj$y3emTk@&9vnH!*uPF12;#mf@Y$zgqS4hf=>4gDAbCEEqf>Kt{?yE3"
    "XZL!cD)dN%uddRAi#k|FdEP0!d6}$Uvrc?Bg9b1ZSHAO0+a*4wxFa+J@mb_u;E|&6!qL*keC>aidEmK*bPQjpb^E^H(U"
    "MV$%jy*)97Ht|UVw6Z0C0cSdL{aOkOEzGX3|TMHfKf7JJ)p3KF-rgsp9Zd%Xy_;zJc3ZJl=N2vNXZZq`cA<xs@1T9CMp"
    "P4x+r$COQm0>GDz9V{gzY+Mamph>?Io7xGS<%^<;P@&qG?sC&dM;#7|_IAbqlgf-"
    "6YSJB0!)p(k9cVW(m>9^`!O@P;$^u)S9Fri4&ZK^H4U65W#6eVvK$j-"
    "k66jwLT#0oacA+0J8O7{O2XpqiE|gDCXmV9Y6~@kT+JHXKi1NGm#`?#?7=vXER39ho>dsNPF(RNW2bGj@jH2psGPxk=w"
    "6eUChcdpw40g>Fg(Z%T!4)LwuP)A3#_jN`CLc9=aL!?nUWN=79W&?yztQPeR6+FjCm9edTJC{AT9$Bg6*N{l@oS2f2?B"
    "^*OFN8aP{(ocs@v7iqP$_~EA<DFIlN68FGy2s<0Rx?EH3%MF(W*1<fa8Q8KfdQ1{N;)_|=>P$xg9HXRdN}Tf>VW|dh<r"
    "MRXF7xwkO7h&vUOJE06?*%by+n@cRY+N>r%pTFUw)|cudPI7fd@PpaYxQ0~lN<dwM+ngkw)us)DmE>0ktm1&9NSX~%(p"
    "YI->4V}Od{v7QC6;&B`s(!2(|0M@J}3$<FXI(9-"
    "BTHoU_77MX^JeFcLY)FsR8W+IpB^>DZ0DLmL*#t@lK2S17gxBNo4SNE`-"
    "r|djt|Zg*@d`wUebwIdy_Gz4C!?vaoQVa~4v2QcB%OT7V~|0Q8}xXrz;*;B1d#3VSb$xi)@?vHmiH~h>aqN8ltKeA?y-"
    "Dsltj7Qj`a0V_BN<)&<7E84`t~Oz};i{*nl@>03OS{c4%Y^nD=<P*?>9@;*@j{2d)>Y)_sx10eTcM0PK4#e_ArJgj1ah"
    "3W8O@s6Cbq4V0Hy-m{Z^J)T}80|9VKJ)GKF&{Ku7`$1gb&||sF0tjdZ5LXT$dMqQ6CUWhcO7vI;vNPrgG@x--o$sM6Vz"
    "q`I%NmC8dMsO*D=eYvx&oCR%M7-M9?J%%@pf2;;(;k-"
    "Y<f)JTh#~wQIBbOL!buzJH<dLro%08>M@ON2o~w;9@Ed3T<<ZhY>2nVtgS&zxRM^zyoQhs>vo@&TL;2QOp6*#OUyo5Fq"
    "6`nX0l35QxZ`;d1|1phpYspG$7GNVAx%4)t_Xg9->fNOb#G%fK3-"
    "}2iaij2|a98OkY_A7^q$It@dx1fGQ0&0@Zboo>pxWXb5PAN=VCC4q%~#?$arjLNhO=kxh^35c@YbJ*GJ<(CyJG=^=p?0"
    "QYD`>`WBW4bbKuv~C5;J*EpR@`6->+a-"
    "nhlmcnPoG~mn*+ejG;dBY%umgt_D)KPSFq$xKP@?`3h{piDJDu>6V~=5(AqRwG2)B9+qYPOfY_jmEhj7PIq}XAPVTd6U"
    "U<BxFk70x%7laKiQLqj@xr332h;ev@&_|fRj<OX0uOAGK8>EG6LIR>kxNONCgTv_nCfPwu1^og?4KnozFI_?-"
    "z`!LLY7%;cbv78V7HnUSu*@C-46}bs2pH7;X*7QTG{6r-"
    "h&bJ3up=J6ryk*jC0>%7rsSqA;R3e{QAQOVZZaoedUQ*c>BtEgxB<k@-"
    "6{Y+iM%unNlln>*fa~)doYidBC#Mu&0>${j11)TV16i>A2rsb6R&?#&{JXvKEP~@hGNPSYdxyFA$m#&Y$+YIg*qa7?on"
    ";b0`(~V79l{~;fs3|TWb(gpm`jbF!Ad2HL(Ts1op$*gRN9z!mD?0%~vvt(m`NK2ZAXb492pNAnS2@qb{X`!+0H!_juc$"
    "!r%V^cdQ0P"
)


@lru_cache(maxsize=None)
def _raw() -> bytes:
    raw = zlib.decompress(base64.b85decode("".join(_PACKED)))
    if hashlib.sha256(raw).hexdigest() != _SHA256:
        raise RuntimeError("ninfer_ir.formats: the stored ggml grid tables are corrupt")
    return raw


@lru_cache(maxsize=None)
def grid(name: str) -> np.ndarray:
    """``float32 [entries, coordinates]``: the values of ggml's ``<name>_grid``."""
    offset = 0
    for grid_name, entries, width, dtype in _LAYOUT:
        size = entries * width
        if grid_name == name:
            coords = np.frombuffer(_raw(), dtype=dtype, count=size, offset=offset)
            values = coords.reshape(entries, width).astype(np.float32)
            values.flags.writeable = False
            return values
        offset += size
    raise KeyError(name)
