"""Statements about the people, things, places and events in a person's life, in Chinese
(pure patterns, no Django; English in lifecycle.extraction.rules_attrs_en).

Most of what people tell an assistant about their lives has one shape: a subject, an
attribute and a value. "我上司的身高是一米六八", "我新买的手机是华为Mate 60", "我常去的健身房在公司
对面", "烹饪乐聚团建盛宴的地点在公司附近的希尔顿酒店". This module reads that shape instead of
listing sentences: it splits the clause at its verb (是, 叫, 在, 姓, 花了, 由 ...), reads the
subject as a chain of 的-joined parts ("我女儿的班主任", "我们小区附近的公园"), decides from
the last part's head noun what the subject is (a relation, an item, a place or an event) and
from the attribute word (身高, 价格, 地址, 地点 ...) or the verb what is said about it.

Predicates name the subject and the attribute ("people: boss: height", "item: 手机: price",
"place: 健身房", "event: 烹饪乐聚团建盛宴: place"), so a later statement about the same
attribute supersedes the earlier one in the write path. An event's time stays "plan: X", the
key the plan patterns of rules_life have always used for dated events. Contents are
the statement said of the person ("用户的上司身高是一米六八"). A known attribute is written
directly (0.85 and up); an attribute word the tables do not know goes to review (0.75).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from lifecycle.extraction import ruledates
from lifecycle.extraction.rulebase import Ctx, RuleCandidate, make, zh_about
from lifecycle.extraction.rules_life import ZH_RELATIONS, date_zh, group_of, zh_clean, zh_job

# --------------------------------------------------------------------------------------
# Vocabulary: attribute words and the head nouns that say what a subject is
# --------------------------------------------------------------------------------------

PEOPLE_ATTRS = {
    "名字": "name", "姓名": "name", "全名": "name", "年龄": "age", "岁数": "age",
    "身高": "height", "个子": "height", "体重": "weight", "生日": "birthday",
    "出生日期": "birthday", "家乡": "hometown", "老家": "hometown", "籍贯": "hometown",
    "住址": "address", "家庭住址": "address", "工作单位": "company", "单位": "company",
    "公司": "company", "工作地点": "work place", "上班地点": "work place", "学历": "education",
    "文凭": "education", "专业": "major", "学校": "school", "母校": "school",
    "毕业院校": "school", "职业": "occupation", "工作": "occupation", "职位": "position",
    "职务": "position", "岗位": "position", "头衔": "position", "爱好": "hobby",
    "兴趣": "hobby", "兴趣爱好": "hobby", "业余爱好": "hobby", "电话": "phone",
    "电话号码": "phone", "手机号": "phone", "手机号码": "phone", "联系方式": "phone",
    "微信": "wechat", "微信号": "wechat", "邮箱": "email", "性格": "personality",
    "脾气": "personality", "星座": "zodiac sign", "属相": "zodiac animal",
    "生肖": "zodiac animal", "血型": "blood type", "年级": "grade", "班级": "class",
    "工龄": "years in work", "工作年限": "years in work", "从业年限": "years in work",
    "从业经验": "years in work", "教龄": "years in work", "驾龄": "years driving",
    "英文名": "english name", "英文名字": "english name", "外号": "nickname", "绰号": "nickname",
    "小名": "nickname", "乳名": "nickname", "网名": "online name", "口头禅": "catchphrase",
    "鞋码": "shoe size", "微信名": "wechat name", "昵称": "nickname",
}  # fmt: skip
ITEM_ATTRS = {
    "品牌": "brand", "牌子": "brand", "型号": "model", "颜色": "colour", "价格": "price",
    "价钱": "price", "售价": "price", "尺寸": "size", "大小": "size", "材质": "material",
    "产地": "origin", "名字": "name", "购买地点": "bought", "购买时间": "bought",
    "续航": "range", "续航里程": "range", "内存": "memory", "运行内存": "memory",
    "存储": "storage", "存储空间": "storage", "硬盘": "storage", "容量": "capacity",
    "重量": "weight", "电池容量": "battery", "排量": "engine size", "油耗": "fuel consumption",
    "里程": "mileage", "屏幕": "screen", "像素": "camera", "功率": "power", "配置": "specs",
    "处理器": "processor", "保修期": "warranty", "车牌": "plate", "车牌号": "plate",
    "系统": "system", "操作系统": "system", "套餐": "plan", "运营商": "carrier",
    "保险": "insurance", "保险费": "insurance", "车险": "insurance", "保养费": "upkeep",
    "油费": "running cost", "电费": "running cost", "话费": "monthly fee", "月租": "monthly fee",
    "月费": "monthly fee",
}  # fmt: skip
PLACE_ATTRS = {
    "名字": "name", "名称": "name", "地址": "address", "位置": "address", "地点": "address",
    "类型": "type", "特色": "features", "特点": "features", "招牌菜": "features",
    "营业时间": "opening hours", "电话": "phone", "面积": "size", "规模": "size",
    "开门时间": "opening hours", "关门时间": "opening hours", "户型": "layout",
    "房租": "rent", "租金": "rent", "房价": "price", "楼层": "floor", "物业费": "fees",
    "会员费": "fees", "年费": "fees", "月费": "fees", "学费": "fees", "停车费": "parking fee",
    "上班时间": "working hours", "下班时间": "working hours", "工作时间": "working hours",
    "校训": "motto", "门牌号": "address", "开放时间": "opening hours",
    "月租": "rent", "会费": "fees", "月卡": "fees", "年卡": "fees", "次卡": "fees", "季卡": "fees",
    "课时费": "fees", "门票": "fees", "人均消费": "price", "人均": "price",
}  # fmt: skip
EVENT_ATTRS = {
    "时间": "time", "日期": "time", "开始时间": "time", "地点": "place", "地址": "place",
    "场地": "place", "举办地点": "place", "举办地": "place", "主题": "topic", "话题": "topic",
    "内容": "agenda", "议程": "agenda", "规模": "scale", "人数": "scale",
    "参加人数": "scale", "参加者": "participants", "参与者": "participants",
    "参加人员": "participants", "嘉宾": "participants", "主持人": "host", "负责人": "host",
    "组织者": "organiser", "主办方": "organiser", "主办单位": "organiser", "费用": "cost",
    "名称": "name", "着装要求": "dress code", "着装": "dress code", "时长": "duration",
    "持续时间": "duration", "报名方式": "registration", "报名方法": "registration",
    "报名渠道": "registration", "报名时间": "registration time", "截止时间": "deadline",
    "报名截止时间": "deadline", "截止日期": "deadline", "报名截止日期": "deadline",
    "门票": "cost", "票价": "cost", "报名费": "cost", "入场费": "cost", "集合时间": "meeting time",
    "集合地点": "meeting point", "奖品": "prize", "奖金": "prize", "路线": "route",
    "形式": "format", "流程": "agenda", "要求": "requirements", "参赛要求": "requirements",
    "参加对象": "participants", "参与对象": "participants", "面向对象": "participants",
    "适合人群": "participants", "举办频率": "schedule", "频率": "schedule",
    "起点": "start point", "终点": "finish point", "出发地点": "meeting point",
    "目的地": "destination",
    "出发时间": "meeting time", "比赛项目": "programme", "节目单": "programme", "菜单": "menu",
    "参会人数": "scale", "参赛人数": "scale", "出席人数": "scale", "到场人数": "scale",
    "项目": "programme", "活动项目": "programme", "筹款目标": "goal",
    "预算": "budget", "交通方式": "transport", "交通": "transport", "一等奖": "prize",
    "大奖": "prize", "特等奖": "prize", "参与部门": "participants", "参加部门": "participants",
    "举办城市": "place", "举办场地": "place", "报名人数": "scale", "参与人数": "scale",
    "人均费用": "cost", "人均": "cost", "餐标": "cost", "参与人员": "participants",
    "参会人员": "participants", "出席人员": "participants", "演出嘉宾": "participants",
    "表演嘉宾": "participants", "特邀嘉宾": "participants", "嘉宾阵容": "participants",
    "目的": "purpose", "住宿": "lodging",
    "住宿地点": "lodging", "酒店": "lodging", "餐饮": "catering", "赞助商": "sponsor",
}  # fmt: skip
# Heads: what the last noun of a subject says it is (matched at the end of that part).
ITEM_HEADS = (
    "手机", "电脑", "笔记本", "平板", "自行车", "单车", "电动车", "汽车", "车", "摩托车",
    "手表", "背包", "书包", "包", "钱包", "相机", "耳机", "音箱", "机器人", "冰箱", "电视",
    "空调", "洗衣机", "眼镜", "鞋", "球鞋", "衣服", "外套", "大衣", "裙子", "围巾", "帽子",
    "戒指", "项链", "耳环", "手链", "钢琴", "吉他", "键盘", "鼠标", "显示器", "沙发", "床",
    "桌子", "椅子", "台灯", "书架", "行李箱", "雨伞", "杯子", "保温杯", "水杯", "游戏机",
    "打印机", "吸尘器", "咖啡机", "微波炉", "烤箱", "空气净化器", "无人机", "滑板", "手办",
    "娃娃", "玩具", "书", "表", "iPad", "Kindle", "Switch", "跑步机", "空气炸锅", "电饭煲",
    "锅", "扫地机", "洗碗机", "烘干机",
    "投影仪", "路由器", "净水器", "热水器", "电动牙刷", "吹风机", "茶具",
    "手环", "钥匙扣", "挂件", "摆件", "平衡车", "电子书", "音响", "充电宝", "U盘", "硬盘",
    "钢笔", "电子琴", "小提琴", "尤克里里", "帐篷", "鱼竿", "球拍", "滑雪板", "冲锋衣", "羽绒服",
    "手套", "墨镜", "香水", "口红", "床垫", "枕头", "窗帘", "地毯", "餐桌", "衣柜", "书桌",
    "茶几", "鱼缸", "花瓶", "婚戒", "手柄", "主机", "阅读器", "房车", "SUV", "电动自行车",
    "手机壳", "钥匙", "马克杯", "茶杯", "画", "相册", "笔记本电脑", "护肤品", "化妆品",
    "洗发水", "沐浴露", "牙膏", "面霜", "洗面奶", "防晒霜", "宽带", "健身卡", "会员卡", "银行卡",
    "信用卡", "公交卡", "饭卡", "校园卡", "医保卡", "社保卡", "年卡", "婚纱", "礼服", "西装",
    "旗袍", "手串", "首饰", "耳钉", "手镯", "镯子", "吊坠", "胸针", "领带", "腰带", "皮带",
)  # fmt: skip
PLACE_HEADS = (
    "健身房", "咖啡店", "咖啡馆", "餐厅", "饭店", "饭馆", "面馆", "酒吧", "超市", "商场",
    "公园", "医院", "诊所", "学校", "幼儿园", "图书馆", "书店", "银行", "食堂", "菜市场",
    "市场", "游泳馆", "体育馆", "电影院", "小区", "酒店", "宾馆", "民宿", "地铁站", "车站",
    "公交站", "停车场", "广场", "步行街", "景区", "寺庙", "博物馆", "美术馆", "理发店",
    "花店", "面包店", "便利店", "药店", "球场", "办公室", "会议室", "工作室", "公司", "单位",
    "部门", "学院", "大学", "中学", "小学", "宿舍", "房子", "工厂", "写字楼", "办公楼", "园区",
    "游泳池", "泳池", "驾校", "琴行", "俱乐部", "中心", "会所", "网吧", "书吧", "KTV", "快递柜",
    "驿站", "自提点",
    "摊", "楼", "店", "厂",
    "馆", "厅", "院", "场", "园", "站", "铺",
)  # fmt: skip
EVENT_HEADS = (
    "会", "会议", "活动", "聚会", "聚餐", "团建", "盛宴", "宴会", "晚宴", "婚礼", "典礼",
    "仪式", "比赛", "演出", "音乐会", "演唱会", "展览", "讲座", "培训", "考试", "面试",
    "旅行", "旅游", "派对", "晚会", "年会", "庆典", "party", "沙龙", "路演", "发布会",
    "答辩", "课", "训练营", "马拉松", "体检", "复查", "手术", "约会", "饭局", "酒局",
    "生日宴", "满月酒", "婚宴", "同学会", "见面会", "分享会", "评审", "评审会", "开幕式",
    "闭幕式", "节", "赛", "春游", "秋游", "郊游", "开放日", "家长会", "野餐", "徒步", "研学",
    "宴", "酒席", "露营", "骑行", "自驾游", "夏令营", "冬令营", "培训营", "集训", "论坛", "集市",
    "市集",
    "义卖", "颁奖礼", "成人礼", "拜访", "抽奖", "年会抽奖", "拓展", "年夜饭", "寿宴", "乔迁宴",
    "谢师宴", "茶话会", "联谊",
    "话剧", "汇报", "述职", "例会", "周会", "晨会", "早会",
)  # fmt: skip
_RELATION = "|".join(sorted(map(re.escape, ZH_RELATIONS), key=len, reverse=True))
# A qualifier before a relation of the people group says which one: "大学室友", "高中的班主任",
# "前同事", "老同学". Only before people ("老爸" is a father, not an old one).
QUALIFIERS = {
    "大学": "college", "高中": "high school", "初中": "middle school", "小学": "primary school",
    "幼儿园": "kindergarten", "研究生": "graduate school", "读研时的": "graduate school",
    "大学时的": "college", "高中时的": "high school", "前": "former", "以前的": "former",
    "原来的": "former", "之前的": "former", "老": "old", "现在的": "current",
    "公司的": "work", "单位的": "work", "隔壁": "next-door", "对门": "across-the-hall",
    "直属": "direct", "部门": "department", "新": "new",
    "楼上": "upstairs", "楼下": "downstairs", "对面": "opposite",
    # round 6: where the person met them or shares with them
    "合租": "flat-share", "合租的": "flat-share", "实习时的": "internship", "实习": "internship",
    "读书时的": "school", "初中时的": "middle school", "小学时的": "primary school",
    "同一个部门的": "department", "同组的": "team", "同部门的": "department",
}  # fmt: skip
_PEOPLE_REL = "|".join(
    sorted((re.escape(k) for k, v in ZH_RELATIONS.items() if group_of(v) == "people"),
           key=len, reverse=True)
)  # fmt: skip
_QUAL = "|".join(sorted(map(re.escape, QUALIFIERS), key=len, reverse=True))
# Words that end a noun for a person by what they do for the person: "投资顾问", "私人医生",
# "健身教练", "家里的保姆". A noun ending so, not in the relation table, is a person of the
# people group, keyed by the noun itself ("people: 投资顾问: employer").
ROLE_ENDS = (
    "顾问", "律师", "教练", "私教", "保姆", "月嫂", "育儿嫂", "司机", "会计", "中介", "医生",
    "大夫", "医师", "护士", "护工", "秘书", "助理", "保安", "管家", "经纪人", "代理人",
    "理财师", "规划师", "设计师", "咨询师", "营养师", "按摩师", "理发师", "美甲师", "化妆师",
    "摄影师", "厨师", "家教", "外教", "导游", "翻译", "保洁", "保洁员", "快递员", "辅导员",
    "业务员", "销售", "客服", "经理", "老师", "教授", "师傅", "主任", "牙医", "兽医", "治疗师",
    "房东", "律所合伙人", "裁缝", "园丁", "钟点工", "搭子", "搭档", "伙伴", "校长", "院长",
    "园长", "店长", "厂长", "局长", "处长", "科长", "村长", "书记", "班长", "队长", "物业",
    "负责人", "带教老师", "导师", "所长", "站长", "馆长", "社长", "会长", "部长", "总监",
)  # fmt: skip
_ROLE = (
    r"(?:(?![的我你他她们是在有叫姓任当做干])[\u4e00-\u9fff]){0,4}(?:"
    + "|".join(sorted(map(re.escape, ROLE_ENDS), key=len, reverse=True))
    + ")"
)
_QREL = rf"(?:{_QUAL})的?(?:{_PEOPLE_REL})"
# Words before a head that only say which one ("那辆", "常去的") and are not part of its key.
_PICK = re.compile(
    r"^(?:这次|本次|下次|这个|那个|这场|那场|这家|那家|这辆|那辆|这台|那台|这部|那部|这件|那件|"
    r"这双|那双|这只|那只|这块|那块|这把|那把|这套|那套|这本|那本|这条|那条|"
    r"[这那](?=[\u4e00-\u9fff]{2}))"
)
_MODIFIER = re.compile(
    r"^(?:最|经常|常常|平时|一直|每天|每周|周末|新|刚|刚刚|最近|去年|今年|上个月|前几天|自己)*"
    r"(?:常去|去|买|用|常用|喜欢|爱去|住|租|开|戴|穿|骑|背|收到|拍|订|参加|报名|报名参加|加入|参与)$"
)
_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程"
    "苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝"
    "龚邵万钱严覃武戴莫孔向汤"
)
# A name right after a relation: "我的邻居王阿姨", "我同事小李", "我上司赵总".
_NICKNAME = (
    rf"(?:[小老阿](?!师|家|公|婆|板|乡|区|时|学|说)[\u4e00-\u9fff]|[{_SURNAMES}](?:阿姨|叔叔|大爷|奶奶|爷爷|老师|医生|师傅|总|工|"
    rf"姐|哥|经理|主任|教练|律师|大夫|护士|教授|警官)|[{_SURNAMES}][\u4e00-\u9fff]{{1,2}}?"
    # a full name, then what is said of them: "我的老同学张伟现在是一名律师"
    r"(?=的|现在|目前|如今|今年|已经|是一名|是一位|在))"
)
# Where a clause divides into subject and what is said of it; longest first.
_VERBS = (
    "的名字叫", "名字叫", "名叫", "叫做", "大约有", "大概有", "约有", "共有", "一共有", "是在",
    "定在了", "订在了", "订在", "选在了", "选在", "设在", "定在", "定于", "位于", "就在",
    "一共持续", "共持续", "大约需要", "大概需要", "持续", "历时",
    "为期", "改到了", "改到", "改在", "改成了", "改成", "推迟到了", "推迟到", "延期到了", "延期到",
    "提前到了", "提前到", "挪到了", "挪到", "预计有", "将有", "会有", "会来", "将迎来", "安排在",
    "一共来了", "来了", "邀请了", "请来了", "邀请", "已经超过", "超过了", "已经达到了",
    "已经达到", "达到了", "包括了", "包括", "包含", "适合",
    "是", "为", "叫", "姓", "在", "有", "花了", "由", "需要",
)  # fmt: skip
_SPLIT = re.compile("|".join(map(re.escape, _VERBS)))
_MOOD = re.compile(r"^(?:心情|感觉|状态|情绪|天|妈|乖|意思|问题|想法|看法|建议|错|身体|头|肚子)")


def _ends(word: str, heads) -> str:
    """The head noun `word` ends with (longest), or ''."""
    return max((h for h in heads if word.endswith(h)), key=len, default="")


# --------------------------------------------------------------------------------------
# People: "我(的)R(的R)*(NAME)" and what follows it
# --------------------------------------------------------------------------------------

_PETS = "|".join(k for k, v in ZH_RELATIONS.items() if group_of(v) == "pet")
# The person's organisations before a role: "我们科室的主任", "我们实验室的负责人".
_ORGS = (
    "小区|公司|单位|学校|部门|班|村|楼|医院|科室|团队|项目组|课题组|小组|组|实验室|社区|学院|系|年级|"
    "工作室|律所|事务所|门诊|诊所|店|工厂|车间|研究所|幼儿园"
)
_LINK = rf"(?:{_QREL}|{_ROLE}|{_RELATION})(?:{_NICKNAME})?"
# Relations joined by 的; someone else's pet ("我同事的狗") is not a relation of the person.
_CHAIN = re.compile(
    rf"^我(?:们家|们|家)?(?:养的|的)?(?:(?:{_ORGS})的?(?=\w{{2}}))?"
    rf"(?P<chain>{_LINK}(?:家?的(?!(?:{_PETS}))(?:{_QREL}|{_ROLE}|{_RELATION})(?:{_NICKNAME})?)*)"
    r"(?P<rest>.+)$"
)
_ZH_NAME = r"[\u4e00-\u9fffA-Za-z·][\u4e00-\u9fffA-Za-z· ]{0,9}"
_N = r"[\d一二两三四五六七八九十百千万]{1,5}"
_TRAITS = (
    "开朗|内向|外向|温柔|随和|严厉|严格|幽默|热情|安静|活泼|善良|耐心|细心|急躁|暴躁|大方|老实|"
    "稳重|靠谱|健谈|友善|和善|认真|固执|要强|独立|乐观|悲观|风趣|低调|高冷|腼腆|害羞|温和|爽快|直爽|"
    "细心|负责|好说话|讲究|随性|节俭|大度|精明|能干|热心|勤快|健谈|爱笑|爽朗|和蔼|慈祥|严肃"
)
_GRADE = (
    r"(?:小学|初中|高中|大学|幼儿园)?[一二三四五六\d]年级|初[一二三]|高[一二三]|大[一二三四]|"
    r"研[一二三]|幼儿园(?:大|中|小)班|(?:大|中|小)班|小学|初中|高中|幼儿园"
)
_DEGREE = r"研究生|博士|硕士|本科|大学|高中|初中|小学|书|研|博|大[一二三四]|高[一二三]|初[一二三]"
# What is said after a person: (pattern, attribute, confidence). The attribute is None for
# their name ("people: boss"); {a} takes the attribute word's key (身高 -> height).
_ATTR_WORD = "|".join(sorted(map(re.escape, PEOPLE_ATTRS), key=len, reverse=True))
_STATE_WORD = r"很|太|特别|挺|比较|非常|有点|不|没|越来越|还|真|好|超|蛮|十分"
_BEFORE = r"(?:以前|之前|过去|曾经|原来|早年|年轻时|年轻的时候|退休前)(?:也|还|曾)?"
# The attribute word is all of it: "工作年限" is not "工作" (the longest known word wins,
# and a longer unknown one goes to review below).
_ATTR_END = (
    rf"(?:是|为|叫|在|有|(?![\u4e00-\u9fff])|(?=[一二两三四五六七八九十百几半]|{_STATE_WORD}))"
)
_PERSON_SAID = (
    (rf"(?:的名字|名字)?(?:叫|名叫|叫做|是叫|的名字是|名字是)(?P<x>{_ZH_NAME})", None, 0.9),
    (r"姓(?P<x>[\u4e00-\u9fff]{1,2})", "surname", 0.9),
    (rf"是(?P<x>{_NICKNAME})", None, 0.88),  # "我的牙医是李医生": who, not what they do
    # What they did before: "以前是一名消防员", "年轻时在煤矿工作" (not what they do now).
    (rf"{_BEFORE}(?:是|当过|做过|干过)(?:一名|一位|一个|名|位|个)?(?P<x>[^，。]{{1,12}}?)",
     "past occupation", 0.88),
    (rf"{_BEFORE}在(?P<x>.{{1,16}}?)(?:工作|上班|任职|任教|就职|打工)(?:过)?", "past employer",
     0.88),
    (rf"{_BEFORE}在(?P<o>.{{1,12}}?)(?:做|当|干)(?P<x>.{{1,10}})", "past occupation", 0.88),
    (r"(?:现在|目前)?是(?:一名|一位|一个|名|位|个)(?P<x>[^，。]{1,12})", "occupation", 0.88),
    (r"(?:今年|去年|已经|刚|刚刚)?考上了(?P<x>[^，。]{2,16})", "school", 0.88),
    (r"(?:现在|目前)?是(?P<x>[^，。的]{2,10})", "job?", 0.88),  # "是数学老师": a job word ends it
    (r"(?:现在|目前|还)?(?:在读|正在读)(?P<x>研究生|博士|硕士|本科|大学|高中|初中)", "school",
     0.88),
    # Their home: "我奶奶家在一个山村里".
    (r"(?:的)?家(?:就)?(?:在|住在|位于)(?P<x>.{1,20})", "home", 0.88),
    (rf"的?(?P<a>{_ATTR_WORD}){_ATTR_END}(?P<x>.{{1,30}})", "{a}", 0.88),
    (rf"(?:的)?(?:性格|人|脾气)?(?:很|特别|非常|比较|挺|超级?|有点|十分)?(?P<x>{_TRAITS})",
     "personality", 0.85),
    (rf"是(?:一)?(?:个|位)(?:很|特别|非常|比较|挺|超级?|十分)?(?P<x>{_TRAITS})的人",
     "personality", 0.85),  # "我的上司是个很幽默的人"
    (rf"(?:今年|现在|已经|快)?(?P<x>{_N}多?(?:岁|个月)(?:半|多)?)(?:大)?了?", "age", 0.88),
    (r"(?:今年|已经|都)(?P<x>[二三四五六七八九]?十[一二三四五六七八九]?|[1-9]\d)多?了", "age",
     0.88),  # "我奶奶今年八十五了"
    (r"是从(?P<x>[^，。]{2,12}?)(?:跳槽|调|转)过来的", "past employer", 0.88),
    # Round 6: their allergies, ways, diet, children and years at work, like the person's own.
    (r"(?:也)?对(?P<x>[^，。]{1,10}?)(?:严重|有点|轻微)?过敏", "allergy", 0.88),
    (r"(?P<x>(?:每天|每周[一二三四五六日天]?|每个?月|每年|每逢[^，。]{1,4}|平时|一般|通常|总是|习惯)"
     r"(?:都|会)?(?:早上|晚上|中午|下午|上午)?(?:都|会)?(?![^，。]*(?:有空|没空|忙|累|闲|开心|高兴|辛苦|无聊|不错|[很太好挺](?![少早晚极])))"
     r"[^，。]{2,16})",
     "habit", 0.85),
    (r"(?P<x>(?:从来)?不(?:吃|喝|抽)(?!了)[^，。]{1,8})", "diet", 0.85),
    (rf"有(?P<x>{_N}个(?:孩子|儿子|女儿|小孩|娃|兄弟姐妹))", "children", 0.85),
    (rf"在(?P<o>[^，。]{{1,10}}?)(?:工作|上班|干|任职|任教)了(?P<x>{_N}多?年)(?:多)?了?",
     "years in work", 0.85),
    (r"(?:已经|去年|前年|今年|早就|刚|刚刚)?(?P<x>退休)了", "status", 0.88),  # "我爸退休了"
    # "我表哥去年离婚了", "我奶奶去年去世了", "我同事怀孕了": a change in their life
    (r"(?:已经|去年|前年|今年|上个月|上周|刚|刚刚|早就)?(?P<x>离婚|结婚|订婚|去世|过世|怀孕|生了二胎|"
     r"生了个[^，。]{1,3}|当爸爸|当妈妈|当爷爷|当奶奶|当外公|当外婆)了", "life event", 0.88),
    (r"(?:最近|现在|正|一直)?在(?P<x>减肥|健身|备考|考研|找工作|装修|戒烟|戒酒|养病|坐月子|备孕|创业)",
     "activity", 0.85),
    (r"(?:最近|现在|目前|正|一直)?在(?:学|练|学习)(?P<x>[^，。]{2,10})", "learning", 0.85),
    (r"开的(?:车)?是(?:一辆|辆)?(?P<x>[^，。]{2,16})", "car", 0.88),  # "我的上司开的是一辆特斯拉"
    (r"(?:远)?嫁(?:到|去)了?(?P<x>[^，。]{2,12})", "location", 0.88),  # "我表姐嫁到了日本"
    (r"(?:是)?(?:在[^，。]{2,10}?)?教(?P<x>语文|数学|英语|物理|化学|生物|历史|地理|政治|音乐|美术|体育|"
     r"科学|钢琴|舞蹈|编程|书法|绘画|[\u4e00-\u9fff]{2}课)的?", "subject taught", 0.88),
    (r"(?:现在|目前|今年)?在(?P<o>.{1,12}?)(?:做|当|干)(?P<x>.{1,10})", "occupation", 0.88),
    (rf"(?:现在|目前|今年)?在(?P<o>.{{1,12}}?)(?:读|上|念)(?P<x>{_DEGREE})", "school", 0.88),
    (rf"(?:今年|现在|目前)?(?:上|读|在读|念)(?P<x>{_GRADE})了?", "grade", 0.88),
    (r"(?:现在|目前|如今|还|一直|已经|也)?在(?P<x>.{1,16}?)(?:工作|上班|任职|任教|就职|实习|打工)",
     "employer", 0.88),
    (r"(?:现在|目前|正)?在(?P<x>[^，。]{2,12}?)(?:留学|读书|上学|读研|读博|念书|深造)", "school",
     0.88),
    (r"(?:现在|目前|如今)?(?:就职于|任职于|供职于)(?P<x>.{2,16})", "employer", 0.88),
    (r"(?:已经|早就|今年|去年)?(?:毕业于|毕业自)(?P<x>.{2,20})", "school", 0.88),
    (r"是(?P<x>.{2,16}?)毕业的", "school", 0.88),
    (r"(?:现在|目前|自己|如今)?(?:在.{1,8}?)?(?:开了|开着|经营着?|开)(?:一|两|几)?(?:家|个|间|所|座)"
     r"(?P<x>.{1,16})", "business", 0.88),
    (r"(?:现在|目前)?住在(?P<x>.{1,16})", "location", 0.88),
    # "现在在加拿大定居", "搬到了杭州": where they live now.
    (r"(?:现在|目前|如今|已经)?在(?P<x>.{1,16}?)(?:定居|生活|居住|安家)了?", "location", 0.88),
    (r"(?:现在|目前|已经)?(?:定居|移居|搬)(?:在|于|到|去)了?(?P<x>.{1,16}?)(?:定居|生活|住)?了?",
     "location", 0.88),
    (r"(?:来自|是)(?P<x>.{1,8}?)人", "hometown", 0.85),
    (r"(?:来自|老家是)(?P<x>[^，。]{2,12})", "hometown", 0.85),
    (r"(?:现在|目前|在公司|在单位)?(?:在[^，。]{1,10}?)?(?:担任|出任|现任|任职)(?P<x>[^，。]{2,12})",
     "position",
     0.88),
    (r"(?:出生于|出生在|生于)(?P<x>(?:[\d一二三四五六七八九零〇]{2,4}年|[\d一二三四五六七八九十]{1,2}月)[^，。]{0,10})",
     "birthday", 0.88),
    (r"(?:出生于|出生在|生于|出生在了)(?P<x>[^，。\d]{2,12})", "birthplace", 0.88),
    (rf"比我(?P<x>[大小](?:{_N}|半)(?:岁|个月)(?:半|多)?)", "age gap", 0.88),
    (r"属(?P<x>[鼠牛虎兔龙蛇马羊猴鸡狗猪])的?", "zodiac animal", 0.88),
    (r"是(?P<x>(?:白羊|金牛|双子|巨蟹|狮子|处女|天秤|天蝎|射手|摩羯|水瓶|双鱼)座)的?",
     "zodiac sign", 0.88),
    (r"是做(?P<x>.{1,10}?)的", "occupation", 0.88),
    # "我的表舅是开出租车的", "我姑父是卖水果的": a trade said by what they do
    (r"是(?P<x>(?:开|跑|卖|修|送|搞|干|教)[^，。的]{1,8}?)的", "occupation", 0.85),
    # "我的新邻居是一对年轻夫妻": who they are, for the person to review
    (r"是(?P<x>一(?:对|家)[^，。]{2,12})", "who", 0.75),
    # "我的上司对下属很严格": what they are like with others
    (rf"对[^，。]{{1,6}}?(?:很|特别|非常|比较|挺|超级?|十分)(?P<x>严格|温柔|客气|{_TRAITS})",
     "personality", 0.85),
    # "我上司大学读的是法律"
    (r"(?:大学|本科|研究生|读研)?(?:的时候)?(?:读|学|念)的(?:专业)?是(?P<x>[^，。]{2,12}?)(?:专业)?",
     "major", 0.88),
    # "我上司有一只叫豆豆的泰迪": their pet
    (rf"(?:家)?(?:有|养了)(?:一|两)(?:只|条)(?:叫(?P<n>[^，。的]{{1,6}})的)?(?P<x>{_PETS})", "pet",
     0.85),
    # "我闺蜜的男朋友是她大学同学": how they know the one before them
    (rf"是(?:她|他|我)的?(?P<x>(?:{_QUAL})?的?(?:{_PEOPLE_REL}))", "relation", 0.85),
    # "我的健身教练是退役的游泳运动员": what they were
    (r"是(?:退役|退休|前)的?(?P<x>[^，。的]{2,10})", "past occupation", 0.85),
    (r"(?:特别|很|最|非常|超)?(?:喜欢|爱)(?P<x>.{1,12})", "likes", 0.85),
    # Where a pet came from: "我家的猫是从救助站领养的".
    (r"是从(?P<x>[^，。]{2,12}?)(?:领养|收养|抱|买|捡|接)(?:回来|来)?的", "adopted from", 0.88),
    # A pet "is" its breed: "我家的狗是一只边牧" (only for pets, checked in _person_said).
    (r"是(?:一只|一条|只|条)?(?P<x>[^，。]{1,10}?)(?:犬|猫)?", "breed", 0.85),
    # An attribute word the table does not know ("研究方向"): kept, but the person reviews it.
    (r"的(?P<g>[\u4e00-\u9fff]{2,5})(?:是|为|有)(?P<x>.{1,30})", "{g}", 0.75),
)  # fmt: skip
_KIND_OF = rf"的|^(?:一?个|一位)?(?:{_STATE_WORD}|好|坏|老实|热心|大忙|明白|聪明|普通|年轻|老)"
# After 是(一)个 a kind of person, not a job: "好人", "很细心的人", "吃货", "工作狂".
_NOT_A_JOB = re.compile(
    r"人$|的|^(?:好|坏|老实|热心|大忙|夜猫子|吃货|工作狂|宅男|宅女|学霸|学渣|话痨|暖男|直男|"
    r"路痴|急性子|慢性子|开心果|乐天派|完美主义者)"
)
# Values that say how things are going, not what an attribute is ("我老公工作很忙").
_STATE = re.compile(rf"^(?:{_STATE_WORD})")


def _chain_key(chain: str) -> tuple[str, str]:
    """ "女儿的班主任" -> ("daughter's head teacher", "people"). A friend's or colleague's
    name is kept in brackets ("同事小李" -> "colleague (小李)") so two colleagues are two keys;
    a son is "son" whether or not his name was said, so later statements supersede."""
    names, group, groups = [], "people", []
    qualified = rf"(?:(?P<q>{_QUAL})的?(?=(?:{_PEOPLE_REL})))?"
    link = rf"(?P<role>{_QREL}(?!\w)|{_ROLE})|{qualified}(?P<r>{_RELATION})"
    for m in re.finditer(rf"(?:{link})(?P<n>{_NICKNAME})?", chain):
        if m["role"] and not re.fullmatch(_QREL, m["role"]):
            # "投资顾问", "私人医生": no relation word of its own, keyed by the noun
            relation = ZH_RELATIONS.get(m["role"], m["role"])
            group = group_of(relation)
            names.append(f"{relation} ({m['n']})" if m["n"] else relation)
            continue
        if m["role"]:
            m = re.fullmatch(rf"{qualified}(?P<r>{_RELATION})(?P<n>{_NICKNAME})?",
                             m["role"] + (m["n"] or ""))  # fmt: skip
        relation = ZH_RELATIONS[m["r"]]
        group = group_of(relation)
        if m["q"] and m["q"] + m["r"] in ZH_RELATIONS:  # "前女友" is a word of its own
            relation = ZH_RELATIONS[m["q"] + m["r"]]
        elif m["q"]:
            relation = f"{QUALIFIERS[m['q']]} {relation}"
        named = m["n"] and group_of(relation) == "people"
        names.append(f"{relation} ({m['n']})" if named else relation)
        groups.append(group)
    if "people" in groups[:-1]:
        group = "people"  # "我同事的老婆": the colleague's wife is no relative of the person
    return "'s ".join(names), group


def _person_said(rest: str, group: str) -> tuple[str | None, str, float] | None:
    """(attribute key, value, confidence) for what follows a person, or None."""
    for pattern, attribute, conf in _PERSON_SAID:
        if not (m := re.fullmatch(pattern, rest)) or attribute == "breed" and group != "pet":
            continue
        value = zh_clean(m["x"])
        if attribute == "{g}":
            attribute = m["g"]
            if _owned(attribute):
                continue  # "我同事的狗是金毛": the colleague's dog, not an attribute
        if attribute == "breed" and (
            _STATE.match(value) or re.search(r"[我你他她]|的$|^(?:从|在|被|由)|领养|收养|捡", value)
        ):
            continue  # "我的狗是我最好的朋友", "我家的猫是很乖的": not a breed
        if attribute == "hometown" and re.search(_KIND_OF, value):
            continue  # "是个好人", "是个很细心的人": what they are like, not where from
        if attribute == "job?":
            if not zh_job(value) or _NOT_A_JOB.search(value):
                continue
            attribute = "occupation"
        if attribute == "occupation" and (_STATE.match(value) or _NOT_A_JOB.search(value)):
            continue  # "我的上司是个好人", "我老公是个很细心的人": what they are like
        if attribute == "past occupation" and (
            _STATE.match(value) or _NOT_A_JOB.search(value) and not zh_job(value)
        ):
            continue  # "我的上司是个好人", "我老公是个很细心的人": what they are like
        if attribute == "{a}":
            attribute = PEOPLE_ATTRS[m["a"]]
            if _STATE.match(value) and attribute not in ("personality", "height"):
                continue
        if value and not re.search(r"什么|谁|啥|哪", value):
            return attribute, value, conf
    return None


def _owned(word: str) -> bool:
    """A thing or relation of someone's ("车", "婚礼", "女儿"), not one of their attributes."""
    heads = ITEM_HEADS + PLACE_HEADS + EVENT_HEADS
    return bool(re.fullmatch(_RELATION, word) or _ends(word, heads))


def _said(text: str, who: Ctx) -> str:
    """The clause said of the person: "我上司的身高" -> "用户的上司的身高"."""
    return zh_about(re.sub(rf"^我(?=(?:{_RELATION}))", "我的", text), who)


def people(text: str, who: Ctx) -> list[RuleCandidate]:
    m = _CHAIN.match(text)
    if m is None:
        return []
    key, group = _chain_key(m["chain"])
    if not (said := _person_said(m["rest"], group)):
        return []
    attribute, _value, conf = said
    predicate = f"{group}: {key}" + (f": {attribute}" if attribute else "")
    content = _said(text, who)
    found = [make("fact", who.subject, predicate, content, conf, 0.7, f"zh:{group}-attribute")]
    return found + _named(m["chain"], who) if attribute else found


# Someone who works at a place the person goes to: "那家理发店的老板叫阿强", "我常去的健身房
# 的教练姓吴" (keyed by the place and the role: "people: 理发店老板").
_PLACE_ROLE = (
    "老板娘|老板|店主|店长|主厨|厨师|教练|私教|老师|医生|大夫|前台|经理|师傅|园长|校长|院长|馆长|"
    "房东|物业经理|保安|理发师|药剂师|班主任"
)
_PLACE_PERSON = re.compile(
    rf"^(?P<s>[^，。]{{2,20}}?)的?(?P<r>{_PLACE_ROLE})(?P<n>{_NICKNAME})?(?P<rest>[^，。]+)$"
)


def place_people(text: str, who: Ctx) -> list[RuleCandidate]:
    m = _PLACE_PERSON.match(text)
    if m is None or not (sub := subject(m["s"])) or sub.kind != "place" or sub.attr:
        return []
    if not (said := _person_said(m["rest"], "people")):
        return []
    attribute, _value, conf = said
    place = (
        re.sub(
            r"^(?:(?:家|小区|公司)?(?:附近|楼下|对面|旁边|门口)的?)?(?:[这那][家个])?", "", sub.key
        )
        or sub.key
    )
    predicate = f"people: {zh_about(place, who)}{m['r']}" + (f": {attribute}" if attribute else "")
    return [make("fact", who.subject, predicate, _said(text, who), conf, 0.6, "zh:place-person")]


def _named(chain: str, who: Ctx) -> list[RuleCandidate]:
    """ "我儿子小宝上二年级了" also says who the son is (a single relation and its name)."""
    m = re.fullmatch(rf"(?P<r>{_RELATION})(?P<n>{_NICKNAME})", chain)
    if m is None or group_of(ZH_RELATIONS[m["r"]]) == "people":
        return []  # a colleague's name is in the key: "我同事小李" is not all colleagues
    relation = ZH_RELATIONS[m["r"]]
    content = f"{who.zh}的{m['r']}叫{m['n']}"
    return [make("fact", who.subject, f"{group_of(relation)}: {relation}", content, 0.88, 0.7,
                 f"zh:{group_of(relation)}")]  # fmt: skip


# --------------------------------------------------------------------------------------
# Items, places and events: split at the verb, read the subject's chain
# --------------------------------------------------------------------------------------


@dataclass
class Subject:
    kind: str  # item, place or event
    key: str  # what the predicate calls it: "手机", "公司的食堂", "儿子的家长会"
    attr: str = ""  # the attribute word closing the subject ("地址"), '' when there is none


def _split_attr(parts: list[str], table: dict) -> tuple[list[str], str]:
    """The attribute word closing the chain ("咖啡店地址" -> 地址), if there is one."""
    last = parts[-1]
    word = max((w for w in table if last.endswith(w)), key=len, default="")
    if not word:
        return parts, ""
    rest = last[: -len(word)]
    return ([*parts[:-1], rest] if rest else parts[:-1]), word


# A time before an event says which one, not what it is called: "下周的团建" is the 团建.
_WHEN = re.compile(
    r"^(?:(?:下下|下|这|本|上)(?:个)?(?:周|星期|礼拜|月)[一二三四五六日天末]?|明天|后天|今天|今晚|"
    r"明晚|今年|明年|去年|周[一二三四五六日末]|星期[一二三四五六日天]|[\d一二三四五六七八九十]{1,2}月"
    r"(?:[\d一二三四五六七八九十]{1,3}[号日])?)$"
)


def _thing(parts: list[str], mine: bool, kind: str) -> Subject | None:
    """An item, place or event: the head noun of the last part says which."""
    last = _PICK.sub("", parts[-1])
    if kind == "item":
        last = re.sub(r"^(?:新|旧|二手)(?=.)", "", last)  # "我的新车": the car
    owners = [_PICK.sub("", p) for p in parts[:-1] if not (_MODIFIER.match(p) or _WHEN.match(p))]
    owners = [p for p in owners if p]  # "这次的技术沙龙": 这次 says which one
    heads = {"event": EVENT_HEADS, "item": ITEM_HEADS, "place": PLACE_HEADS}[kind]
    if kind == "place" and mine and not owners and last in ("家", "家里"):
        return Subject(kind, "家")  # "我家的房租", "我家的户型": the person's home
    head = _ends(last, heads)
    if not head or (kind == "item" and not mine):
        return None  # "手机是华为的" about no one in particular
    if kind == "event" and last == head and len(head) == 1 and not owners:
        return None  # a bare "会" is a verb, not an event
    if kind == "place" and _ends(last, EVENT_HEADS + ITEM_HEADS) and len(head) == 1:
        return None  # "晚会", "手表": a one-character place head inside another word
    if kind == "item":  # "我新买的手机" is the phone; "我女儿的书包" is the daughter's
        kin = [p for p in owners if re.fullmatch(rf"(?:{_RELATION}|[哥姐弟妹])", p)]
        return Subject(kind, "的".join([*kin, last]))
    return Subject(kind, "的".join([*owners, last]))


def subject(text: str) -> Subject | None:
    """What a subject phrase (everything before the verb) is about, or None."""
    mine = text.startswith(("我", "咱"))
    body = re.sub(r"^(?:我们|咱们|我)的?", "", text) if mine else text  # "家附近的医院" kept
    parts = [p for p in re.split(r"(?<!目)的", body) if p]  # 目的地 is one word
    if not parts or _MOOD.match(body):
        return None
    if mine and parts[-1] in ("车牌", "车牌号", "车牌号码"):  # "我的车牌号": the car's
        return Subject("item", "车", "车牌号" if parts[-1] != "车牌" else "车牌")
    tables = (("event", EVENT_ATTRS), ("place", PLACE_ATTRS), ("item", ITEM_ATTRS))
    for kind, table in tables:
        chain, word = _split_attr(parts, table)
        if chain and word and (found := _thing(chain, mine, kind)):
            found.attr = word
            return found
    for kind in ("event", "item", "place"):
        if found := _thing(parts, mine, kind):
            return found
    word = parts[-1]
    if not mine and len(parts) >= 2 and re.fullmatch(r"[\u4e00-\u9fff]{2,5}", word):
        # "读书会的下一本书": an item word said of an event (no one owns it): its attribute
        if _ends(word, ITEM_HEADS) and (found := _thing(parts[:-1], mine, "event")):
            found.attr = word
            return found
    known = len(parts) >= 2 and not _owned(word) and not _AUX.search(word)  # "年终晚宴将"
    known = known and not re.search(r"[就都也还又]$", word)  # "会议室都是…": an adverb
    if known and re.fullmatch(r"[\u4e00-\u9fff]{2,5}", word):
        for kind in ("event", "place", "item"):  # "读书会的下一本书": a word the tables do not know
            found = None if _PASSING.match(word) else _thing(parts[:-1], mine, kind)
            if found and found.key != "家":  # "我家的洗碗机" is a thing at home, not an attribute
                found.attr = word
                return found
    return _unknown_attr(parts, mine)


# Attributes that say how a thing is doing right now, not what it is ("电量只有百分之十").
_PASSING = re.compile(
    r"^(?:电量|电池电量|信号|状态|温度|网速|声音|屏幕碎|早上|上午|中午|下午|傍晚|晚上|夜里|周末|平时|"
    r"每天|现在|最近|今天|昨天|白天|平常|节假日|人|旁边|附近|对面|楼下|楼上|门口|周边|里面|后面|前面|"
    r"周[一二三四五六日天末]|每周|星期|工作日|"
    r"边上|隔壁)"
)


# The heads _unknown_attr tries, longest first (sorted once, not per clause).
_LONGEST_FIRST = (
    ("item", sorted(ITEM_HEADS, key=len, reverse=True)),
    ("place", sorted(PLACE_HEADS, key=len, reverse=True)),
)
_ALL_HEADS = EVENT_HEADS + ITEM_HEADS + PLACE_HEADS


def _unknown_attr(parts: list[str], mine: bool) -> Subject | None:
    """ "电动车的电机" said without 的: "电动车续航" is the e-bike and a word the tables do not
    know. Only for the person's own things and places; the caller sends it to review."""
    last = parts[-1]
    for kind, heads in _LONGEST_FIRST:
        for head in heads:
            at = last.find(head)
            word = last[at + len(head) :] if at > 0 or at == 0 and len(head) > 1 else ""
            if not word:
                continue  # the head is not there, or nothing follows it (the checks below
                # would refuse an empty word too, after comparing it with every head)
            if _PASSING.match(word) or _AUX.search(word) or _ends(word, _ALL_HEADS):
                continue  # "公司年会将": an event, not the company's "年会将"
            if "了" in last[:at]:
                continue
            if (
                re.search(r"[每周点月号天年日就都也还]", word)
                or word[:1] in "店馆厅院场园站铺吧下上里外旁边前后"
            ):
                continue  # "书店每周三": the 书店 and a time, not the 书's "店每周三"
            if re.fullmatch(r"[\u4e00-\u9fff]{2,4}", word):
                found = _thing([*parts[:-1], last[: at + len(head)]], mine, kind)
                if found:
                    found.attr = word
                    return found
    return None


_COLOUR = r"[黑白红橙黄绿青蓝紫灰粉棕金银米咖卡其藏深浅亮暗酒玫瑰天]{1,3}色?"
_CLOCK = re.compile(
    r"(?:早上|上午|中午|下午|傍晚|晚上|凌晨)?[零一二两三四五六七八九十\d]{1,3}[点:：]"
    r"|[\d一二三四五六七八九十]{1,3}月[\d一二三四五六七八九十]{1,3}[日号]|(?:周|星期|礼拜)[一二三四五六日天]"
)
_LASTS = ("持续", "历时", "为期", "需要", "要", "大约需要", "大概需要", "一共持续", "共持续")
_DURATION = re.compile(
    r"(?:大约|大概|约|一共|共)?[\d一二两三四五六七八九十半几]{1,3}(?:个)?(?:多|半|整)?"
    r"(?:小时|钟头|分钟|天|周|星期|个月|晚)(?:半)?(?:左右)?(?:时间)?"
)
_HOST = re.compile(
    r"(?P<x>.{1,12}?)(?P<v>主持|负责|组织|主办|承办|牵头|策划|带队|安排)(?:筹备|组织|策划|安排|举办)?"
)
_SCALE = re.compile(
    rf"(?:大约|大概|约|将近|近|超过)?(?P<x>(?:{_N}多?(?:个|位|名)?|上百|几十|几百)"
    r"(?:人|客户|嘉宾|来宾|宾客|同事|观众|学生|家长|选手|游客|员工|会员|代表|专家)"
    r"|(?:\d+|[一二两三四五六七八九十百千]+)多?(?:位|名)[\u4e00-\u9fff]{1,3}?"
    # "三百个家庭参加", "二十支队伍参赛": counted in anything, when they take part
    rf"|{_N}多?(?:个|支|组|对|家)[\u4e00-\u9fff]{{1,4}}?(?=(?:左右)?(?:参加|参与|出席|报名|参赛)))"
    r"(?:左右)?(?:参加|参与|出席|报名|到场|参会|参赛)?"
)
_WHEN_IN = re.compile(
    r"(?:下下|下|这|本)(?:个)?(?:周|星期|礼拜|月)|明天|后天|明年|[\d一二三四五六七八九十]{1,2}月|[\d一二三四五六七八九十]{1,3}[号日]"
)


_FEATURE = (
    r"(?:降噪|防水|无线|有线|蓝牙|全自动|半自动|自动|智能|手动|折叠|电动|二手|全新|定制|限量版?|"
    r"机械|触屏|变频|静音|便携|加厚|纯棉|真皮|实木|不锈钢|纯手工|手工|国产|进口|新款|老款|自动挡|"
    r"手动挡|四驱|两驱|混动|纯电|插电|布艺|皮质|双开门|对开门)"
)


_LOOKS = (
    r"透明|半透明|磨砂|哑光|亮面|镜面|格子|条纹|碎花|纯色|圆形|方形|长方形|圆的|方的|大号|小号|中号|"
    r"加大号|长款|短款|宽松|修身|加绒|防滑|可折叠|迷你"
)


def _item(sub: Subject, verb: str, value: str) -> tuple[str, float] | None:
    """The attribute an item's value gives, and how sure: "是爸爸送的" is who gave it."""
    if sub.attr:  # a word the tables do not know waits for review
        return (ITEM_ATTRS[sub.attr], 0.88) if sub.attr in ITEM_ATTRS else (sub.attr, 0.75)
    if verb == "花了":
        return "price", 0.88
    if verb == "叫":
        return "name", 0.88
    if verb == "有" and re.search(r"(?:功能|模式|接口)$", value):
        return "features", 0.85  # "我的扫地机器人有自动集尘功能"
    if verb not in ("是", "是在"):
        return None  # "我的手机在桌上": where it lies now, not worth keeping
    value = "在" + value if verb == "是在" else value
    if re.search(
        r"(?:买|提|订|购|购买|入手|换|淘|办|到|收到|寄到|寄来)的?$|买回来|入手|^在.{2,12}(?:配|定做|定制|订做)的?$",
        value,
    ):
        return "bought", 0.88  # "是去年十月提的": when it was got, not a brand
    if re.fullmatch(rf"{_N}(?:寸|英寸|码|号)(?:半)?的?", value):
        return "size", 0.8  # "我家的电视是七十五寸的": a figure, for the person to confirm
    if re.fullmatch(rf"(?:{_LOOKS})的?", value):
        return "features", 0.8  # "是透明的", "是磨砂的": how it looks, not who made it
    if re.search(r"送(?:的|给)?$|送我|礼物|(?:留|传|买|做|织)给我的?$", value):
        return "gift", 0.88
    if re.search(r"(?:织|做|画|缝|绣|亲手.{0,2})的?$", value):
        return "made by", 0.85
    if re.fullmatch(rf"{_COLOUR}的?", value):
        return "colour", 0.88
    if re.fullmatch(r".{1,10}?(?:产|生产|制造|进口|原装进口|带回来)的?", value):
        return "origin", 0.85  # "是意大利进口的", "是从日本带回来的"
    if re.fullmatch(_FEATURE + "的?", value):
        return "features", 0.75  # "是降噪的": what it can do, not who made it
    measure = r"(?!辆|台|部|个|件|双|只|块|把|套|本|条|款|张|架)"  # "是一辆…" says what it is
    if re.match(r"[\d一二两三四五六七八九十百千万几]" + measure, value):
        return "", 0.75  # "是五百度的", "是两年前的": a figure the tables cannot name
    if re.search(r"[配发给借租留换修]的$", value):
        return "", 0.75  # "是公司配的": who provided it, not who made it
    if re.fullmatch(r"[^的我你他她]{1,10}的", value) and not re.search(_RELATION, value):
        return "brand", 0.85  # "是海尔的", "是索尼的"; not "是我爸的" (whose it is)
    return "", 0.85  # what it is: "华为Mate 60", "黑色的双肩包"


def _place(sub: Subject, verb: str, value: str) -> tuple[str, float] | None:
    if sub.attr in PLACE_ATTRS:
        return PLACE_ATTRS[sub.attr], 0.88
    if sub.attr:
        return (sub.attr, 0.75) if verb in ("是", "为", "有") else None
    if verb in ("在", "位于", "就在", "是在"):
        return "", 0.88  # where it is
    if verb in ("叫", "名叫", "叫做", "名字叫", "的名字叫"):
        return "name", 0.88
    if verb == "是":
        return "", 0.85
    if verb.endswith("有") and sub.key == "家":
        return None  # "我们家有三口人": the family, read by the family rules
    if verb.endswith("有") and re.match(
        rf"{_N}多?(?:个|名|位)?(?:员工|职工|人|学生|老师|医生|护士|同事)", value
    ):
        return "size", 0.85  # "我们公司一共有两百多个员工": how many work or study there
    return ("features", 0.75) if verb == "有" else None


_MOVED = ("改到了", "改到", "改在", "改成了", "改成", "推迟到了", "推迟到", "延期到了", "延期到",
          "提前到了", "提前到", "挪到了", "挪到")  # fmt: skip
_COMES = ("有", "来", "大约有", "大概有", "约有", "共有", "一共有", "预计有", "将有", "会有",
          "会来", "将迎来", "一共来了", "来了")  # fmt: skip


def _event(sub: Subject, verb: str, value: str) -> tuple[str, float] | None:
    if sub.attr in EVENT_ATTRS:
        return EVENT_ATTRS[sub.attr], 0.88
    if sub.attr:  # a word the tables do not know, said with 是: the person reviews it
        return (sub.attr, 0.75) if verb in ("是", "为", "在", "定在") else None
    if verb in _MOVED and (_CLOCK.search(value) or _WHEN_IN.search(value)):
        return "time", 0.88  # a new time: the same key, so it supersedes the old one
    if verb in _MOVED and re.fullmatch(
        r"(?:在)?(?:线上|线下|网上|视频会议|腾讯会议|钉钉|Zoom)(?:开|进行|举行)?", value
    ):
        return "format", 0.88  # "部门会议改到了线上"
    if verb in (
        "在",
        "是在",
        "定在",
        "定于",
        "安排在",
        "订在了",
        "订在",
        "定在了",
        "选在了",
        "选在",
        "设在",
    ):
        timed = _CLOCK.search(value) or _WHEN_IN.search(value) or _MONTH_PART.search(value)
        return ("time", 0.88) if timed else ("place", 0.88)
    if verb == "由" and _HOST.fullmatch(value):
        return ("organiser" if _HOST.fullmatch(value)["v"] in ("组织", "主办", "承办") else
                "host"), 0.88  # fmt: skip
    if verb in _COMES and _SCALE.fullmatch(value):
        return "scale", 0.88
    if verb in _COMES and re.fullmatch(rf"{_N}个?(?:环节|部分|阶段|节目|项目|议程|主题)", value):
        return "agenda", 0.85  # "烹饪乐聚团建盛宴共有三个环节"
    if verb in _LASTS and _DURATION.fullmatch(value):
        return "duration", 0.88
    if verb == "需要" and re.match(
        r"(?:每人|每个人|每位|大家|所有人|参加的人|每个部门|各部门|各组)?(?:都)?"
        r"(?:自带|带上?|携带|穿|提前|自备|报名|预约|准备|交)",
        value,
    ):
        return "requirements", 0.88  # "户外拓展活动需要自带午餐", "需要每人带一道拿手菜"
    if verb == "需要" and re.fullmatch(
        r"在[^，。]{2,10}?(?:之前|前|以前)(?:报名|提交|确认|交)[^，。]{0,6}", value
    ):
        return "deadline", 0.88  # "年会的节目需要在下周三前报名"
    if verb == "适合" and re.search(r"岁|孩子|儿童|家庭|成人|老人|新手|初学者|人群|员工", value):
        return "participants", 0.85  # "亲子阅读会适合三到六岁的孩子参加"
    if verb in ("包括", "包括了", "包含"):
        people = re.search(r"部|组|员工|同事|家属|客户|嘉宾|同学|老师|学生|人", value)
        return ("participants" if people else "agenda"), 0.85  # "参与人员包括市场部和技术部"
    if verb in ("叫", "名叫", "叫做", "名字叫", "的名字叫"):
        return "name", 0.88  # "我参加的读书会叫周末共读"
    if verb in ("是", "为") and (_CLOCK.match(value) or _WHEN_IN.match(value)):
        return "time", 0.88  # "烹饪乐聚团建盛宴是下下周六", "家长开放日是下周三全天"
    if verb == "是" and _ends(value, EVENT_HEADS) == _ends(sub.key, EVENT_HEADS) and len(value) > 3:
        return "name", 0.85  # "我报名的马拉松是上海国际马拉松": which one it is
    if verb in ("邀请了", "请来了", "邀请") and _SCALE.fullmatch(value):
        return "scale", 0.88  # "答谢宴会邀请了五十位客户"
    if verb in ("邀请了", "请来了", "邀请") and re.search(r"嘉宾|演讲|分享|主讲|出席|参加", value):
        return "guests", 0.88  # "峰会邀请了三位院士作为嘉宾"
    return None


# "四月中旬", "月底": a time, not a place.
_MONTH_PART = re.compile(r"(?:月|年)(?:初|底|末|中|中旬|上旬|下旬|份)")


# "年会将在会展中心举行": 将 belongs to neither side, 举行 says nothing more than 在.
_AUX = re.compile(r"(?:大约|大概|预计|约)?(?:将会|即将|将|会|要|预计|计划|已经|已|还)$")
_HELD = re.compile(r"(?:隆重)?(?:举行|召开|举办|进行|开幕|开始|开)$")


# An attribute word that takes its value without a verb: "培训时长两个小时" (时长为…).
_VERBLESS = re.compile(
    r"(?:时长|全程)(?=(?:大约|大概|约|一共|共)?[\d一二两三四五六七八九十半几整])"
    r"|(?:一共|总共|前后共?)(?=[\d一二两三四五六七八九十半几]{1,3}个?(?:多|半|整)?(?:小时|天|周|个?星期|晚))"
)


# A fee said with its period and no verb: "健身房一个月会费两百块", "瑜伽馆月卡三百九".
_FEE = re.compile(
    r"(?<=[\u4e00-\u9fff])(?P<per>一个月|每个?月|一年|每年|一次|每次|一节课?|每节课?|一季度?|每季度?)?"
    r"(?P<w>会费|会员费|月卡|年卡|次卡|季卡|年费|月费|课时费|学费|停车费|门票|物业费|房租|租金|人均消费|人均|"
    r"保险费|保险|车险|保养费|油费|电费|话费|月租)"
    r"(?P<per2>每张|一张|每人|一人|每位|每个人)?(?P<n>(?:大约|大概|约|要|才|只要)?[\d一二两三四五六七八九十几])"
)


# An event and its time, then the verb: "烹饪乐聚团建盛宴下下周六晚上七点开始".
_STARTS = re.compile(
    r"^(?P<s>[^，。]{2,20}?)(?:将|会|将会|预计)?(?:于|在)?(?P<t>(?:下下|下|这|本|明|后|今)[^，。]{1,14}?|"
    r"[\d一二三四五六七八九十]{1,2}月[^，。]{1,12}?)(?:准时|正式)?(?:开始|举行|举办|召开|进行|开幕|开席|开)$"
)
_DEADLINE = re.compile(r"(?<=[\u4e00-\u9fff])的?(?P<w>报名)?截止(?:到|于|至|日期是|时间是)")


def things(text: str, who: Ctx, now: datetime) -> list[RuleCandidate]:
    said = text  # the person's words; the split reads "时长两个小时" as "时长为两个小时"
    if (m := _STARTS.match(text)) and (sub := subject(m["s"])) and sub.kind == "event":
        if not sub.attr and (when := ruledates.future(m["t"], now)) is not None:
            return [make("fact", who.subject, f"plan: {zh_about(sub.key, who)}",
                         _said(said, who) + date_zh(when), 0.88, 0.7, "zh:event-time")]  # fmt: skip
    text = _DEADLINE.sub(lambda m: f"的{m['w'] or ''}截止时间是", text, count=1)
    text = _VERBLESS.sub("时长为", text)
    text = _FEE.sub(
        lambda m: f"的{m['w']}为{m['per'] or ''}{m['per2'] or ''}{m['n']}", text, count=1
    )
    m = _SPLIT.search(text)
    if m is None:
        return []
    head, verb = text[: m.start()], m[0]
    head = re.sub(r"(?<=[\u4e00-\u9fff]{2})(?:大约|约|一共|总共|差不多)$", "", head)  # "人数大约是"
    if verb in ("会有", "会来") and subject(head + "会"):  # "年会有三百人": the 年会 has
        head, verb = head + "会", verb[1:]
    if head.endswith("会") and len(_ends(head[:-1], EVENT_HEADS)) > 1:
        head = head[:-1]  # "…盛宴会持续三个小时": 会 is "will", the 盛宴 is the event
    # "年会将在…": 将 is neither side's; but "同学会在…" keeps its 会.
    if not (sub := subject(head)) and _AUX.search(head):
        sub = subject(_AUX.sub("", head))
    if sub is None:
        return []
    value = zh_clean(text[m.end() :])
    if sub.kind == "event":
        value = _HELD.sub("", value) or value
    if not value or re.search(r"什么|谁|啥|哪", value) or (_STATE.match(value) and not sub.attr):
        return []
    if verb.endswith("有") and _STATE.match("有" + value):  # "油耗有点高": a view, not a figure
        return []
    if sub.kind == "item" and text.rstrip("。.!！ ").endswith("的"):
        value += "的"  # zh_clean drops it, but "是海尔的" is a brand and "是海尔" a model
    read = {"item": _item, "place": _place, "event": _event}[sub.kind](sub, verb, value)
    if read is None:
        return []
    attribute, conf = read
    content = _said(said, who)
    when = ruledates.future(value, now) if sub.kind == "event" else None
    if sub.kind == "event" and (attribute == "time" or when is not None and not attribute):
        event = zh_about(sub.key, who)
        return [make("fact", who.subject, f"plan: {event}", content + date_zh(when), conf, 0.7,
                     "zh:event-time")]  # fmt: skip
    predicate = f"{sub.kind}: {zh_about(sub.key, who)}" + (f": {attribute}" if attribute else "")
    return [make("fact", who.subject, predicate, content, conf, 0.6, f"zh:{sub.kind}-attribute")]


# --------------------------------------------------------------------------------------
# What is near the person's home or work, and what they are doing these days
# --------------------------------------------------------------------------------------

_NEAR = re.compile(
    r"^我(?:们|家)?(?P<at>家|小区|公司|学校|单位|宿舍|办公室|住的地方|这边|那边)?"
    r"(?P<where>楼下|附近|对面|旁边|门口|隔壁|楼上|后面|前面|周边|里面?|边上)"
    r"(?:新开了|开了|有|就是|是)(?:一|两|几)?(?:家|个|座|所|间|条|片|处)?"
    r"(?:叫(?P<n>[^，。的]{2,12})的|(?P<h>[^，。]{1,8}?)[，,]?叫(?P<m>[^，。]{2,12})$)?"
    r"(?P<head>[^，。]{0,10})$"
)


def nearby(text: str, who: Ctx) -> list[RuleCandidate]:
    """ "我家楼下有一家叫老街面馆的店": a place near home or work, by its name if said."""
    m = _NEAR.match(text)
    if m is None or not (m["n"] or m["m"] or _ends(m["head"] or "", PLACE_HEADS)):
        return []
    name = zh_clean(m["n"] or m["m"] or "") or f"{m['at'] or '家'}{m['where']}的{m['head']}"
    conf = 0.88 if (m["n"] or m["m"]) else 0.8
    return [make("fact", who.subject, f"place: {name}", _said(text, who), conf, 0.6,
                 "zh:place-nearby")]  # fmt: skip


# Lasting qualities of a place or a thing, after a plain degree word. Not moods or passing
# states ("好卡", "没电了", "太吵了": 好/太/真 are exclamations, and these adjectives are not
# in the list), and never at the write level: "我们学校的操场很大" is the person's view of
# their own place, worth keeping but theirs to confirm (0.7, review).
_DESCRIBED = re.compile(
    r"^(?P<s>(?:我们|咱们|我)(?:家)?的?[^，。]{1,14}?)(?:也|都)?(?:很|特别|非常|挺|比较|十分|相当|蛮|超级)"
    r"(?P<a>大|小|新|旧|老|高|矮|宽|窄|宽敞|狭窄|安静|热闹|干净|漂亮|好看|气派|现代|古老|方便|"
    r"偏僻|远|近|贵|便宜|轻|重|结实|耐用|省油|省电|有名|出名|豪华|简陋|温馨|明亮|大气)的?$"
)


def described(text: str, who: Ctx) -> list[RuleCandidate]:
    """ "我们学校的操场很大": a lasting quality of the person's place or thing, for review."""
    m = _DESCRIBED.match(text)
    if m is None or re.search(r"离|跟|和|比|对", m["s"]):
        return []  # "我住的地方离公司很近": a distance or a comparison, not a quality
    if not (sub := subject(m["s"])) or sub.kind == "event" or sub.attr:
        return []
    predicate = f"{sub.kind}: {zh_about(sub.key, who)}: description"
    return [make("fact", who.subject, predicate, _said(text, who), 0.7, 0.5,
                 f"zh:{sub.kind}-description")]  # fmt: skip


_HOURS = re.compile(
    r"^(?P<s>[^，。]{2,20}?)(?:只|只在|仅|仅在)?(?P<t>(?:每天|平时|工作日|周末|每周[一二三四五六日天]|"
    r"周[一二三四五六日]到周[一二三四五六日]|周[一二三四五六日末]|"
    r"节假日)?(?:都|一般|通常)?(?:早上|上午|中午|下午|傍晚|晚上|凌晨)?"
    r"(?:[零一二两三四五六七八九十\d]{1,3}(?:点|[:：]\d\d)(?:半|[\d一二三四五六七八九十]{1,3}分?)?)?"
    r"(?:二十四小时|24小时|全天|通宵|全年无休)?)"
    r"(?:也|照常|正常)?(?:就|都|不|不对外)?(?:开门|关门|营业|打烊|闭馆|休息|开放|关闭|歇业|开饭|供餐)"
)


_DAY_PARTS = r"早上|上午|中午|下午|晚上|白天|夜里"
# "只开到下午两点", "营业到晚上十点": open until a time.
_OPEN_UNTIL = re.compile(
    r"^(?P<s>[^，。]{2,20}?)(?:每天|平时|工作日|周末)?(?:一般|通常|都)?(?:只|就)?(?:开|营业|开门|开放)"
    r"(?:到|至)(?P<t>(?:第二天)?(?:早上|上午|中午|下午|傍晚|晚上|凌晨|半夜)?"
    r"[零一二两三四五六七八九十\d]{1,3}(?:点|[:：]\d\d)(?:半)?)(?:左右|钟)?$"
)


def hours(text: str, who: Ctx) -> list[RuleCandidate]:
    """ "我们家附近的菜市场早上六点开门": when the person's place opens or closes."""
    m = _OPEN_UNTIL.match(text) or _HOURS.match(text)
    timed = r"\d|[零一二两三四五六七八九十]点|周|日|末|假|小时|全天|通宵|无休|" + _DAY_PARTS
    if m is None or not re.search(timed, m["t"] or ""):
        return []
    sub = subject(m["s"])
    if sub is None or sub.kind != "place" or sub.attr:
        return []
    predicate = f"place: {zh_about(sub.key, who)}: opening hours"
    return [make("fact", who.subject, predicate, _said(text, who), 0.88, 0.6,
                 "zh:place-hours")]  # fmt: skip


# Where the person works, studies or lives, said as a place: "我上班的地方在中关村".
_OWN_PLACE = re.compile(
    r"^我(?:现在|目前)?(?P<v>住|工作|上班|实习|办公|上学|读书)的(?:地方|地点|位置|公司|单位|学校|小区)"
    r"(?:就|现在|目前)?(?:在|位于|是在)(?P<x>[^，。]{2,20})$"
)
_OWN_PLACE_KEY = {"住": "location", "上学": "school place", "读书": "school place"}


def own_place(text: str, who: Ctx) -> list[RuleCandidate]:
    """ "我工作的地方在望京": the person's work place (or home, or school) by where it is."""
    m = _OWN_PLACE.match(text)
    if m is None or re.search(r"什么|哪|谁|离|附近$", m["x"]):
        return []
    predicate = _OWN_PLACE_KEY.get(m["v"], "work place")
    return [make("fact", who.subject, predicate, _said(text, who), 0.88, 0.7, "zh:own-place")]


# What one of the person's places offers: "我们公司的健身房对员工免费开放", "我们食堂早上七点
# 开始供应早餐", "我家楼下的超市可以送货上门" (only the person's own places: "健身房提供毛巾" is
# about no place in particular).
_OFFERS = re.compile(
    r"^(?P<s>我[^，。]{1,20}?)(?P<t>(?:每天|早上|上午|中午|下午|晚上|全天|周末|平时|工作日)"
    r"[^，。]{0,8}?)?(?:开始|也|还|都)?(?:免费)?(?P<v>提供|供应|卖|出售|支持|可以|能|只收|接受|"
    r"对[^，。]{1,8}?(?:免费)?开放)(?P<x>[^，。]*)$"
)


def offers(text: str, who: Ctx) -> list[RuleCandidate]:
    m = _OFFERS.match(text)
    if m is None or not (sub := subject(m["s"])) or sub.kind != "place" or sub.attr:
        return []
    if not m["v"].endswith("开放") and not zh_clean(m["x"]) or re.search(r"什么|哪|谁|吗", text):
        return []
    predicate = f"place: {zh_about(sub.key, who)}: offers"
    return [make("fact", who.subject, predicate, _said(text, who), 0.85, 0.5, "zh:place-offers")]


# How long the person has had a thing: "我的笔记本电脑已经用了五年了", "这辆车我开了八年".
_HAD_FOR = re.compile(
    rf"^(?P<s>我[^，。]{{1,14}}?)(?:已经|都|一共)?(?:用|开|骑|戴|穿|养)了(?P<x>{_N}多?(?:年|个月)多?)了?$"
)


def had_for(text: str, who: Ctx) -> list[RuleCandidate]:
    m = _HAD_FOR.match(text)
    if m is None or not (sub := subject(m["s"])) or sub.kind != "item" or sub.attr:
        return []
    if re.match(r"我(?:开|骑|戴|穿|用|养)", m["s"]):
        return []  # "我开车开了十年": how long they have driven, not how old a car is
    predicate = f"item: {zh_about(sub.key, who)}: owned for"
    return [make("fact", who.subject, predicate, _said(text, who), 0.85, 0.5, "zh:item-age")]


# A thing the person bought, where or when: "我上周在优衣库买了一件羽绒服". The thing is
# theirs (a gift bought for someone, "给我妈买了…", is not read here), so it is the item's
# `bought`; "…，花了五百九" goes on about it (goes_on reads it as "我买的羽绒服花了五百九").
_BOUGHT = re.compile(
    r"^我(?P<t>[^，。在给]{0,8}?)(?:在(?P<at>[^，。给]{1,12}?))?(?:新|刚刚|刚|又|终于)?"
    r"(?:买了|入手了|换了|订了|网购了)(?:一|两)?(?:个|台|件|辆|部|双|只|块|把|套|本|条|款|张|"
    r"架|副|顶|瓶|支|盏|面)?(?P<x>[^，。了]{1,10})$"
)


def _bought(text: str) -> tuple[Subject, str] | None:
    m = _BOUGHT.match(text)
    if m is None or not (m["t"] or m["at"]) or re.search(r"什么|哪|谁", text):
        return None  # "我买了一个手机" with neither place nor time says little
    if re.search(rf"{_RELATION}|们|[他她]", m["t"]):
        return None  # "我朋友上周在宜家买了一个书架": the friend's, not the person's
    sub = subject("我的" + m["x"])
    return (sub, m["x"]) if sub and sub.kind == "item" and not sub.attr else None


def bought(text: str, who: Ctx, now: datetime) -> list[RuleCandidate]:
    if (found := _bought(text)) is None:
        return []
    sub, _thing_said = found
    when = ruledates.past(text, now)
    content = _said(text, who) + (date_zh(when) if when else "")
    predicate = f"item: {zh_about(sub.key, who)}: bought"
    return [make("fact", who.subject, predicate, content, 0.85, 0.5, "zh:item-bought")]


# The person's part in an event: "我是这次年会的主持人", "我负责公司的年会策划".
_HOST_ROLES = {"主持人": "host", "负责人": "host", "组织者": "organiser", "策划": "organiser",
               "策划人": "organiser", "司仪": "host"}  # fmt: skip
_MY_ROLE = re.compile(
    r"^我(?:是|担任|当|做)(?P<e>[^，。]{2,16}?)的(?P<r>主持人|负责人|组织者|策划人?|嘉宾|评委|志愿者|"
    r"领队|讲师|主讲人|伴郎|伴娘|司仪|摄影师|裁判)$|^我负责(?P<e2>[^，。]{2,16}?)的?(?:策划|组织|筹备)$"
)
# An event the person signed up for: "我报名了下个月的半程马拉松".
_SIGNED_UP = re.compile(r"^我(?:已经)?(?:报名了|报名参加了|报了名的是|报了)(?P<e>[^，。]{2,20})$")


def _named_event(phrase: str) -> Subject | None:
    """The event a phrase names ("下个月的半程马拉松"), not one of its attributes; else None."""
    sub = subject(phrase)
    return sub if sub is not None and sub.kind == "event" and not sub.attr else None


def my_role(text: str, who: Ctx, now: datetime) -> list[RuleCandidate]:
    if m := _MY_ROLE.match(text):
        if not (sub := _named_event(m["e"] or m["e2"])):
            return []
        role = _HOST_ROLES.get(m["r"] or "负责人", "role")
        return [make("fact", who.subject, f"event: {zh_about(sub.key, who)}: {role}",
                     _said(text, who), 0.88, 0.7, "zh:event-my-role")]  # fmt: skip
    if m := _SIGNED_UP.match(text):
        if not (sub := _named_event(m["e"])) or re.search(r"什么|哪", text):
            return []
        when = ruledates.future(m["e"], now)
        content = _said(text, who) + date_zh(when)
        return [make("fact", who.subject, f"plan: {zh_about(sub.key, who)}", content, 0.88, 0.7,
                     "zh:event-signed-up")]  # fmt: skip
    return []


# An event that comes back: "亲子读书会每个月第一个周六举行".
_RECURS = re.compile(
    r"^(?P<s>[^，。]{2,20}?)(?P<t>每(?:个|一|两|隔)?(?:周|星期|礼拜|月|年|季度|天)[^，。]{0,10}?|每逢[^，。]{1,8}?)"
    r"(?:都|会|固定)?(?:举行|举办|召开|开|进行|活动|聚会|见面|碰头|聚)(?:一次)?$"
)


# An event called off: "今年的年会取消了" (the plan's key, so it supersedes the plan).
_CALLED_OFF = re.compile(
    r"^(?P<s>[^，。]{2,20}?)(?:已经|临时|突然)?(?:被)?(?:取消|延期|推迟|改期)了$"
)


def called_off(text: str, who: Ctx) -> list[RuleCandidate]:
    m = _CALLED_OFF.match(text)
    if m is None or not (sub := _named_event(m["s"])):
        return []
    predicate = f"plan: {zh_about(sub.key, who)}"
    return [make("fact", who.subject, predicate, _said(text, who), 0.88, 0.7, "zh:event-off")]


# An event running from one day to another: "元宵灯会从正月十三持续到正月十八".
_RUNS = re.compile(
    r"^(?P<s>[^，。]{2,20}?)(?:将)?从(?P<a>[^，。]{2,12}?)(?:一直)?(?:持续|开|办|举行)?到"
    r"(?P<b>[^，。]{2,12}?)(?:结束|为止)?$"
)


def runs(text: str, who: Ctx, now: datetime) -> list[RuleCandidate]:
    m = _RUNS.match(text)
    if m is None or not (sub := _named_event(m["s"])):
        return []
    when = ruledates.future(m["a"], now)
    content = _said(text, who) + date_zh(when)
    return [make("fact", who.subject, f"plan: {zh_about(sub.key, who)}", content, 0.88, 0.7,
                 "zh:event-time")]  # fmt: skip


def recurring(text: str, who: Ctx) -> list[RuleCandidate]:
    m = _RECURS.match(text)
    if m is None or not (sub := _named_event(m["s"])):
        return []
    predicate = f"event: {zh_about(sub.key, who)}: schedule"
    return [make("fact", who.subject, predicate, _said(text, who), 0.88, 0.6, "zh:event-recurs")]


# How far home or work is from somewhere: "我家离地铁站步行五分钟".
_DISTANCE = re.compile(
    r"^我(?:们)?(?P<at>家|公司|单位|学校|小区|住的地方|宿舍)离(?P<to>[^，。]{2,10}?)"
    r"(?:只有|大概|大约|就|不到|差不多|有)?(?P<how>步行|走路|开车|骑车|坐地铁|打车|坐公交)?"
    r"(?:只要|只有|大概|大约|就|不到|差不多|要|需要)?(?P<x>[\d一二两三四五六七八九十半几]{1,3}"
    r"(?:个)?(?:多)?(?:分钟|公里|站|米|小时|里)(?:左右|多)?)(?:的路)?(?:路程)?$"
)


def distance(text: str, who: Ctx) -> list[RuleCandidate]:
    m = _DISTANCE.match(text)
    if m is None:
        return []
    predicate = f"place: {m['at']}: distance to {m['to']}"
    return [make("fact", who.subject, predicate, _said(text, who), 0.88, 0.6, "zh:distance")]


# The person's own body and signs: "我身高一米七五", "我血型是O型", "我属龙", "我是双鱼座".
_SELF_ATTRS = {"身高": "height", "体重": "weight", "血型": "blood type", "星座": "zodiac sign",
               "属相": "zodiac animal", "生肖": "zodiac animal", "鞋码": "shoe size",
               "视力": "eyesight", "MBTI": "MBTI", "mbti": "MBTI", "人格类型": "MBTI",
               "近视度数": "eyesight", "度数": "eyesight"}  # fmt: skip
_SELF = re.compile(
    rf"^我的?(?P<a>{'|'.join(_SELF_ATTRS)})(?:是|有|为|大概|大约|差不多)*(?P<x>[^，。]{{1,12}})$"
    r"|^我属(?P<z>[鼠牛虎兔龙蛇马羊猴鸡狗猪])的?$"
    r"|^我是(?P<s>(?:白羊|金牛|双子|巨蟹|狮子|处女|天秤|天蝎|射手|摩羯|水瓶|双鱼)座)的?$"
)


def self_attrs(text: str, who: Ctx) -> list[RuleCandidate]:
    m = _SELF.match(text)
    x = m["x"] if m else ""
    if m is None or x and (_STATE.match(x) or re.search(r"什么|多少|几|了$|涨|掉|减|胖|瘦|变", x)):
        return []  # "我体重太重了", "我体重最近涨了": a worry, not a figure
    if x and not re.search(r"[\dA-Za-z一二两三四五六七八九十百半座]|[鼠牛虎兔龙蛇马羊猴鸡狗猪]", x):
        return []  # a figure, a blood type or a sign
    predicate = _SELF_ATTRS[m["a"]] if m["a"] else "zodiac animal" if m["z"] else "zodiac sign"
    return [make("identity", who.subject, predicate, _said(text, who), 0.9, 0.6, "zh:self")]


# When a document or a membership of the person's runs out: "我的护照明年三月到期".
_EXPIRES = re.compile(
    r"^我(?:的|家的?)?(?P<x>(?:车的?)?(?:护照|签证|驾照|驾驶证|身份证|保险|车险|会员|会员卡|合同|"
    r"租约|劳动合同|信用卡|年卡|健身卡|居住证|港澳通行证|通行证))(?:将|会)?(?:在|于)?"
    r"(?P<t>[^，。]{2,12}?)(?:就|要)?(?:到期|过期)了?$"
)


def expires(text: str, who: Ctx, now: datetime) -> list[RuleCandidate]:
    m = _EXPIRES.match(text)
    if m is None or re.search(r"什么|哪|几", m["t"]):
        return []
    content = _said(text, who) + date_zh(ruledates.future(m["t"], now))
    thing = m["x"].replace("的", "")
    return [make("fact", who.subject, f"expiry: {thing}", content, 0.88, 0.7, "zh:expiry")]


# --------------------------------------------------------------------------------------
# A clause that goes on about the subject of the one before it
# --------------------------------------------------------------------------------------

_ALL_ATTRS = sorted({*PEOPLE_ATTRS, *ITEM_ATTRS, *PLACE_ATTRS, *EVENT_ATTRS}, key=len, reverse=True)
_GOES_ON = re.compile(
    rf"^(?P<a>{'|'.join(map(re.escape, _ALL_ATTRS))})(?=是|为|在|定在|定于|大约|大概|约|有|叫|由)"
)
_PERSON_GOES_ON = re.compile(
    r"^(?:今年|现在|目前|已经|如今)?(?:[\d一二两三四五六七八九十]{1,3}岁|住在|在[^，。]{1,12}(?:工作|上班)|"
    r"是(?:一名|一位|一只|一条)|毕业于|来自|老家|家乡|是[^，。的]{1,8}人$|姓[\u4e00-\u9fff]$|在读|"
    rf"正在读|(?:上|读|在读)(?:{_GRADE})|"
    r"在[^，。]{1,12}(?:读书|上学|留学|读研|读博)|属[鼠牛虎兔龙蛇马羊猴鸡狗猪]|"
    # round 6: what they did before, studied, teach, like, cannot eat
    r"(?:以前|之前|年轻时|年轻的时候|退休前)(?:是|在|当过|做过)|(?:大学)?(?:学|读)的(?:专业)?是|"
    r"教(?:语文|数学|英语|物理|化学|生物|历史|地理|政治|音乐|美术|体育|钢琴|舞蹈)$|"
    r"(?:特别|很|最|非常)?(?:喜欢|爱)|对[^，。]{1,8}过敏|是[^，。]{2,12}毕业的$|是(?:个|一个)|"
    r"(?:每天|每周|每个?月|每年|平时|一般)(?![^，。]*(?:很|太|好)))"
)


# The person's group and a dated event, without a verb: "我们部门下周五聚餐".
_OWN_EVENT = re.compile(
    r"^我们?(?P<o>部门|公司|班|组|团队|小组|家|全家|单位|学校)?的?(?P<t>[^，。]{2,12}?)"
    r"(?P<e>(?:(?![一二三四五六七八九十号日月周天末年有要去会将在的个场次])[\u4e00-\u9fff]){0,3}(?:"
    + "|".join(sorted((h for h in EVENT_HEADS if len(h) > 1), key=len, reverse=True))
    + r"))$"
)


def _own_event(text: str, now: datetime) -> tuple[str, object] | None:
    """("部门聚餐", the date) for "我们部门下周五聚餐", or None when no time is said."""
    m = _OWN_EVENT.match(text)
    if m is None or not (m["o"] or text.startswith("我们")):
        return None  # "我下周一要去参加一个面试": the person's own plan, read by the plan rules
    if (when := ruledates.future(m["t"], now)) is None:
        return None
    return (m["o"] or "") + m["e"], when


def own_event(text: str, who: Ctx, now: datetime) -> list[RuleCandidate]:
    if (found := _own_event(text, now)) is None:
        return []
    event, when = found
    return [make("fact", who.subject, f"plan: {event}", _said(text, who) + date_zh(when), 0.88,
                 0.7, "zh:own-event")]  # fmt: skip


def goes_on(before: str, clause: str, now: datetime) -> str | None:
    """ "公司年会在希尔顿酒店举行，时间是下周六": the second clause is the 年会's time, so it is
    read as "公司年会的时间是下周六"; "我的上司叫赵雅琳，老家在河北" as "我的上司老家在河北". None
    when the clause has a subject of its own or the one before names nothing."""
    attr = _GOES_ON.match(clause)
    if (got := _bought(before)) and re.match(r"(?:一共|总共|共)?花了", clause):
        return f"我买的{got[1]}{clause}"  # "我在宜家买了一个书架，花了三百五"
    off = _CALLED_OFF.match(before)
    if off and clause.startswith(_MOVED) and (sub := subject(off["s"])) and sub.kind == "event":
        return off["s"] + clause  # "周五的团建取消了，改到下周五": the event's new time
    if person := _CHAIN.match(before):
        if attr and attr["a"] in PEOPLE_ATTRS or _PERSON_GOES_ON.match(clause):
            return before[: person.start("rest")] + clause
        return None
    verb = _SPLIT.match(clause)  # "…，大约有三百人参加": the verb comes first
    if attr and (own := _own_event(before, now)):  # "我们部门下周五聚餐，地点在…"
        return f"{own[0]}的{clause}"
    if attr is None and verb is None or (m := _SPLIT.search(before)) is None:
        return None
    head = before[: m.start()]
    if not subject(head) and _AUX.search(head):
        head = _AUX.sub("", head)
    if not (sub := subject(head)) or sub.attr:
        return None
    if verb and sub.kind != "event" and not (sub.kind == "item" and verb.group() == "花了"):
        return None  # "我的自行车是在迪卡侬买的，花了一千二": the bike's price
    return f"{head}的{clause}" if attr else head + clause


# A name first, then who they are: "张伟是我的大学室友", "王姐是我们部门的主管", "小李是我的
# 健身教练" read as "我的大学室友叫张伟" (the same key as when said that way).
_NAME_FIRST = re.compile(
    rf"^(?P<n>(?:[小老阿][\u4e00-\u9fff]|[{_SURNAMES}][\u4e00-\u9fff]{{1,2}}|[{_SURNAMES}](?:姐|哥|总|工|"
    r"老师|医生|阿姨|叔叔|师傅|经理|主任|教练))|[A-Z][a-z]+)是(?P<who>我(?:们|家)?的?.{1,12})$"
)


def name_first(text: str) -> str | None:
    """ "张伟是我的大学室友" -> "我的大学室友叫张伟", or None when what follows is no person."""
    m = _NAME_FIRST.match(text)
    if m is None:
        return None
    person = _CHAIN.match(m["who"] + "叫" + m["n"])
    if person is None or person["rest"] != "叫" + m["n"]:
        return None
    return m["who"] + "叫" + m["n"]


def chinese(text: str, who: Ctx, now: datetime) -> list[RuleCandidate]:
    """Candidates for one Chinese clause (hedges already removed), or []."""
    for step in (self_attrs, people, place_people, own_place, had_for, distance, recurring,
                 called_off, hours, nearby, described, offers):  # fmt: skip
        if found := step(text, who):
            return found
    if found := (runs(text, who, now) or expires(text, who, now) or own_event(text, who, now)
                 or bought(text, who, now) or my_role(text, who, now)):  # fmt: skip
        return found
    return things(text, who, now)
